package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckPrintsScheduleAndGiveUp(t *testing.T) {
	path := writeConfig(t, `{
	  "mcpServers": {
	    "files": {"command": "sh", "args": ["-c", "exit"], "env": {"TOKEN": "s3cret"}, "alwaysAllow": []},
	    "fast":  {"command": "sh", "reconnect": {"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 3}, "waitForReadyMs": 2000},
	    "off":   {"command": "sh", "disabled": true},
	    "nowait": {"command": "sh", "waitForReadyMs": 0},
	    "web":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}}
	  }}`)
	code, out, errOut := runCLI("check", "--config", path)
	if code != 0 {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{
		"4 server(s), disabled: off",
		"files (mcpServers.files)",
		"transport   stdio: sh -c exit",
		"env         TOKEN (values not shown)",
		"environ     the base variables (PATH, HOME, the locale, proxies, ...) and env",
		"schedule    500ms, 1s, 2s, 4s, 8s, 16s, 30s ×4",
		"gives up    2m31.5s after the first failure",
		"stability   30s established resets the retry budget",
		// The effective wait, as proxy and run serve it (docs/design.md §6).
		"calls       wait up to 10s for a reconnect during an outage (the default of proxy and run; waitForReadyMs 0 fails fast)",
		"nowait (mcpServers.nowait)",
		"calls       fail fast during an outage (waitForReadyMs 0)",
		"fast (mcpServers.fast)",
		"schedule    100ms, 200ms, 400ms",
		"gives up    700ms after",
		"calls       wait up to 2s for a reconnect",
		"web (mcpServers.web)",
		"transport   http: https://example.com/mcp",
		"headers     Authorization (values not shown)",
		"probe       every 15s (1s on a loopback URL) while no event stream watches the session, timeout 5s; 2 failures in a row",
		"schedule    500ms, 1s, 2s, 4s, 8s, 16s, 30s ×4 (each wait shortened by up to 50% by jitter)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "s3cret") {
		t.Error("check printed an env value")
	}
	if !strings.Contains(errOut, "warning: mcpServers.files.alwaysAllow: ignored") {
		t.Errorf("stderr lacks the warning: %q", errOut)
	}
}

func TestCheckErrorNamesThePath(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {"files": {"command": "x", "reconnect": {"maxDelayMs": 0}}}}`)
	code, out, errOut := runCLI("check", "--config", path)
	want := path + ": mcpServers.files.reconnect.maxDelayMs: must be > 0 milliseconds, got 0"
	if code != 1 || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("code %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
}

func TestCheckNeedsConfig(t *testing.T) {
	code, _, errOut := runCLI("check")
	if code != 2 || !strings.Contains(errOut, "--config FILE is required") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("check", "--config", filepath.Join(t.TempDir(), "none.json"))
	if code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: code %d, stderr %q", code, errOut)
	}
}

func TestScheduleFoldsTheCap(t *testing.T) {
	p := backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 1_000_000, Jitter: 0.5}
	if got := schedule(p); got != "1s ×1000000 (each wait shortened by up to 50% by jitter)" {
		t.Errorf("schedule %q", got)
	}
	p = backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Hour, MaxAttempts: 2}
	if got := schedule(p); got != "1s, 2s" {
		t.Errorf("schedule %q", got)
	}
}

// check prints each server's effective filter, overrides and replay
// setting (docs/design.md §21).
func TestCheckPrintsTheFilter(t *testing.T) {
	path := writeConfig(t, `{"tools": {"deny": ["delete_*"]}, "mcpServers": {
	  "files": {"command": "x", "disabledTools": ["write_file"], "prompts": {"allow": ["greet"]},
	            "toolOverrides": {"search": {"name": "find", "title": "Find"}}},
	  "plain": {"command": "x", "tools": {"deny": []}, "replaySafeCalls": false}}}`)
	code, out, errOut := runCLI("check", "--config", path)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{
		"tools       never delete_* write_file",
		"prompts     only greet",
		`override    search: exposed as find, title "Find"`,
		"replay      a call lost to a crash is sent once more if the tool declares readOnlyHint or idempotentHint",
		"tools       every tool the server lists",
		"replay      off: a call lost to a crash is never sent again",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckPrintsStartMode(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
	    "a": {"command": "sh", "start": "lazy"},
	    "b": {"command": "sh", "idleStopMs": 60000},
	    "c": {"command": "sh"}}}`)
	code, out, errOut := runCLI("check", "--config", path)
	if code != 0 {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{
		"start       lazy: started by the first request once its catalog is cached\n  idle stop   after 10m0s",
		"start       eager: started with the proxy\n  idle stop   after 1m0s",
		"start       eager: started with the proxy\n\n",
	} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}
