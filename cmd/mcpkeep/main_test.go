package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runIfCLIChild() // the test binary doubles as mcpkeep (cli_child_test.go)
	goleak.VerifyTestMain(m)
}

// runCLI runs mcpkeep in-process with args and returns code, stdout, stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestNoArgsPrintsUsage(t *testing.T) {
	code, out, errOut := runCLI()
	if code != 2 || out != "" || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no args: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help", "help"} {
		code, out, errOut := runCLI(arg)
		if code != 0 || errOut != "" {
			t.Errorf("%s: code %d, stderr %q", arg, code, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") || !strings.Contains(out, c.summary) {
				t.Errorf("%s: usage does not list %s", arg, c.name)
			}
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	code, out, errOut := runCLI("frobnicate", "--x")
	if code != 2 {
		t.Errorf("code %d, want 2", code)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	if !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "Usage:") {
		t.Errorf("stderr %q lacks the error and usage", errOut)
	}
}

// takesOperands lists the commands whose positional arguments are operands
// (files), exempt from the stray-argument check below.
var takesOperands = map[string]bool{"replay": true}

// TestEverySubcommandHelp: --help and `help NAME` print the subcommand's
// usage on stdout and exit 0; a bad flag or a stray argument exits 2.
func TestEverySubcommandHelp(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if seen[c.name] || c.summary == "" || c.run == nil {
			t.Errorf("command %q: duplicate or incomplete", c.name)
		}
		seen[c.name] = true
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			code, out, errOut := runCLI(args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: mcpkeep "+c.name) {
				t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
		code, out, errOut := runCLI(c.name, "--no-such-flag")
		if code != 2 || out != "" || !strings.Contains(errOut, "no-such-flag") || !strings.Contains(errOut, "Usage: mcpkeep "+c.name) {
			t.Errorf("%s --no-such-flag: code %d, stdout %q, stderr %q", c.name, code, out, errOut)
		}
		if takesOperands[c.name] {
			continue // its positional arguments are files: replay_test.go covers them
		}
		code, _, errOut = runCLI(c.name, "stray")
		if code != 2 || !strings.Contains(errOut, `unexpected argument "stray"`) {
			t.Errorf("%s stray: code %d, stderr %q", c.name, code, errOut)
		}
	}
}
