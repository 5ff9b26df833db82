package replicatest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv, set to 1, turns a missing part into a failure.
const RequireEnv = "MCPKEEP_REQUIRE_REPLICAS"

// Need returns the path of the program name, or ends the test: a
// failure when RequireEnv is 1, else a skip, both naming the package
// to install.
func Need(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " is not on PATH: apt-get install -y " + debianPackage + " (the replica tests start a real one)"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s is 1 but %s", RequireEnv, msg)
	}
	t.Skip(msg)
	return ""
}
