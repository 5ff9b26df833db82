package main

import (
	"os"
	"testing"
)

// TestAuthTokenNotInherited (docs/design.md §19): the --auth-token-env
// variable is read once and removed from mcpkeep's environment, which
// every spawned server inherits at its Open.
func TestAuthTokenNotInherited(t *testing.T) {
	t.Setenv("MCPKEEP_TEST_TOKEN", "s3cret")
	l := listenOpts{addr: "127.0.0.1:0", tokenEnv: "MCPKEEP_TEST_TOKEN"}
	if err := l.check(); err != nil {
		t.Fatal(err)
	}
	if l.token != "s3cret" {
		t.Errorf("token %q", l.token)
	}
	if v, ok := os.LookupEnv("MCPKEEP_TEST_TOKEN"); ok {
		t.Errorf("the token is still in the environment servers inherit: %q", v)
	}
}
