package main

import (
	"reflect"
	"testing"
)

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
