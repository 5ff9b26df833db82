package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runIfCLIChild() // the test binary doubles as mcpkeep (cli_child_test.go)
	// The proxy keeps a catalog cache in the user's cache directory: the
	// tests' (and their children's) go to a directory of their own.
	dir, err := os.MkdirTemp("", "mcpkeep-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	goleak.VerifyTestMain(cleanupM{m, dir})
}

// cleanupM removes the tests' cache directory after the run.
type cleanupM struct {
	m   *testing.M
	dir string
}

func (c cleanupM) Run() int {
	defer os.RemoveAll(c.dir)
	return c.m.Run()
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

// subcommands are mcpkeep's own commands (not cobra's help and
// completion), each with its group.
func subcommands(t *testing.T) []*cobra.Command {
	t.Helper()
	var cmds []*cobra.Command
	for _, c := range newRoot(io.Discard, io.Discard).Commands() {
		switch c.Name() {
		case "help", "completion":
			continue
		}
		if c.Short == "" || c.GroupID == "" || (c.Run == nil && c.RunE == nil) {
			t.Errorf("command %q: incomplete (summary, group, run)", c.Name())
		}
		cmds = append(cmds, c)
	}
	if len(cmds) != 10 {
		t.Errorf("%d commands, want proxy, run, status, auth, check, diagram, replay, demo, fixture, version", len(cmds))
	}
	return cmds
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "help"} {
		code, out, errOut := runCLI(arg)
		if code != 0 || errOut != "" {
			t.Errorf("%s: code %d, stderr %q", arg, code, errOut)
		}
		for _, c := range subcommands(t) {
			if !strings.Contains(out, "  "+c.Name()+" ") || !strings.Contains(out, c.Short) {
				t.Errorf("%s: usage does not list %s", arg, c.Name())
			}
		}
		for _, group := range []string{"Serving:", "Checking:", "Trying out:", "Other:", "  completion "} {
			if !strings.Contains(out, group) {
				t.Errorf("%s: usage lacks %q", arg, group)
			}
		}
	}
}

// TestCompletion: cobra's completion command writes each shell's script.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI("completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, "mcpkeep") || len(out) < 1000 {
			t.Errorf("completion %s: code %d, stderr %q, %d bytes", shell, code, errOut, len(out))
		}
	}
	if code, _, _ := runCLI("completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: code %d, want 2", code)
	}
	// The flags' values complete from their fixed words.
	code, out, _ := runCLI("__complete", "proxy", "--log-format", "")
	if code != 0 || !strings.Contains(out, "text\njson\n") {
		t.Errorf("__complete proxy --log-format: code %d, out %q", code, out)
	}
}

func TestHelpOfUnknownCommand(t *testing.T) {
	code, out, errOut := runCLI("help", "frobnicate")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("code %d, stdout %q, stderr %q", code, out, errOut)
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
	for _, c := range subcommands(t) {
		usage := "Usage:\n  mcpkeep " + c.Name()
		for _, args := range [][]string{{c.Name(), "--help"}, {c.Name(), "-h"}, {"help", c.Name()}} {
			code, out, errOut := runCLI(args...)
			if code != 0 || errOut != "" || !strings.Contains(out, usage) || !strings.Contains(out, "-h, --help") {
				t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
		code, out, errOut := runCLI(c.Name(), "--no-such-flag")
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "mcpkeep "+c.Name()+": ") ||
			!strings.Contains(errOut, "no-such-flag") || !strings.Contains(errOut, usage) {
			t.Errorf("%s --no-such-flag: code %d, stdout %q, stderr %q", c.Name(), code, out, errOut)
		}
		if takesOperands[c.Name()] {
			continue // its positional arguments are files: replay_test.go covers them
		}
		code, _, errOut = runCLI(c.Name(), "stray")
		if code != 2 || !strings.Contains(errOut, `unexpected argument "stray"`) {
			t.Errorf("%s stray: code %d, stderr %q", c.Name(), code, errOut)
		}
	}
}
