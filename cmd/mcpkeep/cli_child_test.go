package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The end-to-end tests run mcpkeep as a real process without building it:
// the test binary re-executes itself with envCLIChild set, and TestMain
// then runs the command line instead of the tests (the helper-process
// pattern). Children inherit the variable, so a config whose command is
// this binary with args "fixture --mode M" runs the built-in fixture.
const envCLIChild = "MCPKEEP_TEST_CLI"

func runIfCLIChild() {
	if os.Getenv(envCLIChild) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// testExe is this test binary.
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// cliEnv is the environment of a re-executed mcpkeep. It also turns off
// the race detector's one-second sleep at exit, which would slow every
// fixture exit of a -race binary.
func cliEnv() []string {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append(os.Environ(), envCLIChild+"=1", "GORACE="+gorace)
}

// cliCommand returns mcpkeep with args, as a child process.
func cliCommand(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(testExe(t), args...)
	cmd.Env = cliEnv()
	return cmd
}

// fixtureArgs is the config entry of a fixture server in mode.
func fixtureServer(t *testing.T, mode string) map[string]any {
	// The child gets only the base environment and its env: the
	// variable that makes this binary mcpkeep must be given explicitly.
	return map[string]any{"command": testExe(t), "args": []string{"fixture", "--mode", mode},
		"env": map[string]string{envCLIChild: "1", "GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")}}
}
