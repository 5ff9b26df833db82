package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunDashEndsFlags: after --, every argument is the server's, --help
// too; before it, the first operand ends mcpkeep's flags (so a forgotten
// -- is reported, not taken for mcpkeep's flags).
func TestRunDashEndsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		// --help after -- would print run's help and exit 0 if it were ours.
		{[]string{"run", "--max-attempts", "abc", "--", "npx", "-y", "pkg", "--help"}, "--max-attempts"},
		{[]string{"run", "npx", "--help"}, `unexpected argument "npx" (the server's command goes after --)`},
		{[]string{"run", "npx", "-y", "pkg"}, `unexpected argument "npx"`},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want 2 and %s", c.args, code, out, errOut, c.want)
		}
	}
}

// TestSingleDashLongFlag: the flag package's -config is misuse now, and
// the message gives the GNU spelling.
func TestSingleDashLongFlag(t *testing.T) {
	for want, args := range map[string][]string{
		"--config x.json": {"check", "-config", "x.json"},
		"--config=x.json": {"check", "-config=x.json"},
		"--help":          {"-help"},
		"--init-wait":     {"run", "-init-wait", "1s", "--", "server"},
	} {
		code, out, errOut := runCLI(args...)
		want = "(a long flag takes two dashes: " + strings.Fields(want)[0] + ")"
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want 2 and %q", args, code, out, errOut, want)
		}
	}
}

// TestDurationFlags: a duration flag takes a unit or plain milliseconds,
// and a bad value is an error naming the flag.
func TestDurationFlags(t *testing.T) {
	for in, want := range map[string]time.Duration{"500": 500 * time.Millisecond, "2s": 2 * time.Second, "0": 0, "1.5s": 1500 * time.Millisecond} {
		var f durationFlag
		if err := f.Set(in); err != nil || f.d != want || !f.set {
			t.Errorf("Set(%q): %v, %v, set %v; want %v", in, err, f.d, f.set, want)
		}
	}
	for _, args := range [][]string{
		{"run", "--init-wait", "soon", "--", "server"},
		{"run", "--initial-delay", "x", "--", "server"},
		{"demo", "--duration", "x"},
	} {
		code, _, errOut := runCLI(args...)
		if code != 2 || !strings.Contains(errOut, args[1]) || !strings.Contains(errOut, "milliseconds") {
			t.Errorf("%q: code %d, stderr %q; want 2 naming %s", args, code, errOut, args[1])
		}
	}
	// --init-wait 500 is accepted: the error is the next flag's.
	if code, _, errOut := runCLI("run", "--init-wait", "500", "--max-attempts", "abc", "--", "x"); code != 2 ||
		strings.Contains(errOut, "--init-wait") || !strings.Contains(errOut, "--max-attempts") {
		t.Errorf("--init-wait 500: code %d, stderr %q", code, errOut)
	}
	// 1000 is milliseconds: one second, too short for the demo.
	if code, _, errOut := runCLI("demo", "--duration", "1000"); code != 2 || !strings.Contains(errOut, "got 1s") {
		t.Errorf("demo --duration 1000: code %d, stderr %q", code, errOut)
	}
}

// TestDiagramLongOutputFlag: -o is also --output, and --o (which the flag
// package accepted) still works.
func TestDiagramLongOutputFlag(t *testing.T) {
	for _, flag := range []string{"-o", "--output", "--o"} {
		dir := t.TempDir()
		code, _, errOut := runCLI("diagram", "--format", "dot", flag, dir)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: code %d, stderr %q", flag, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "lifecycle.dot")); err != nil {
			t.Errorf("%s: %v", flag, err)
		}
	}
}
