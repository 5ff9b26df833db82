package main

import (
	"reflect"
	"testing"
)

// TestAuthScenarios: the auth/* names of the client section of the
// suite's list, without their spec versions; a server scenario is never
// one.
func TestAuthScenarios(t *testing.T) {
	list := []byte(`Server scenarios (test against a server):
  - server-initialize [2025-06-18,2025-11-25]
  - auth/not-a-client-one [x]

Client scenarios (test against a client):
  - initialize [2025-06-18,2025-11-25]
  - auth/metadata-default [2025-11-25]
  - auth/client-credentials-jwt [extension]
  - sse-retry [2025-11-25]
`)
	got := authScenarios(list)
	want := []string{"auth/metadata-default", "auth/client-credentials-jwt"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("authScenarios = %q, want %q", got, want)
	}
}

// TestBaselineClient reads the client section of the go-sdk's baseline
// only, past comments and blank lines.
func TestBaselineClient(t *testing.T) {
	yml := []byte(`server:
  - server-thing
client:
  # OAuth mechanisms not implemented by the Go MCP SDK.
  - auth/client-credentials-basic

  # SEP-1932
  - auth/dpop
other:
  - auth/elsewhere
`)
	got := baselineClient(yml)
	want := map[string]bool{"auth/client-credentials-basic": true, "auth/dpop": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("baselineClient = %v, want %v", got, want)
	}
}
