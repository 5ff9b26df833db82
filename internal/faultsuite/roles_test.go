package faultsuite

import (
	"os"
	"strings"
)

// envRole makes this test binary, re-executed, play a part of a fault
// test instead of running the tests: it is read in init, before TestMain,
// and removed from the environment at once so nothing the part spawns
// inherits it.
const envRole = "MCPKEEP_FAULT_ROLE"

// roles are the parts, by name; each ends the process (or returns, which
// exits 0).
var roles = map[string]func(){}

// role registers a part. Files declare theirs as package variables
// (var _ = role(...)), which are all initialized before any init runs.
func role(name string, f func()) struct{} {
	roles[name] = f
	return struct{}{}
}

func init() {
	role, ok := os.LookupEnv(envRole)
	if !ok {
		return
	}
	os.Unsetenv(envRole)
	f, ok := roles[role]
	if !ok {
		os.Stderr.WriteString("faultsuite: unknown role " + role + "\n")
		os.Exit(2)
	}
	f()
	os.Exit(0)
}

// roleEnv is the environment entries that make a re-executed test binary
// play role: no tests run, and the race detector does not sleep a second
// at exit.
func roleEnv(role string) map[string]string {
	return map[string]string{
		envRole:  role,
		"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0"),
	}
}

// roleEnviron is roleEnv appended to this process's environment, for
// os/exec.
func roleEnviron(role string) []string {
	env := os.Environ()
	for k, v := range roleEnv(role) {
		env = append(env, k+"="+v)
	}
	return env
}

// testExe is this test binary.
func testExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}
