package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestReplayRecordedTraces(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(root, "testdata", "traces", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded traces: %v", err)
	}
	code, out, errOut := runCLI(append([]string{"replay"}, paths...)...)
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(paths) {
		t.Fatalf("%d summary lines for %d files:\n%s", len(lines), len(paths), out)
	}
	re := regexp.MustCompile(`^\S+\.jsonl: valid trace: \d+ events over \S+; fixture: \d+ gens, \d+ losses, \d+ exhausted, final disposed$`)
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("summary line %q", l)
		}
	}
}

func TestReplayInvalid(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const hdr = `{"mcpkeep_trace":1,"server":"s","started":"2026-01-02T03:04:05Z","policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":3,"jitter":0},"connectTimeoutMs":30000,"terminationWindowMs":10000}`
	const connected = `{"t":3,"server":"s","gen":1,"event":"connected","from":"connecting","to":"established","attempt":0}`
	rows := []struct {
		name, body, want string
	}{
		{"illegal.jsonl", hdr + "\n" + connected + "\n" + `{"t":4,"server":"s","gen":1,"event":"retry_due","from":"established","to":"connecting","attempt":0}` + "\n",
			":3: illegal transition: retry_due is not declared in state established\n"},
		{"headless.jsonl", connected + "\n", `:1: missing header: the first line must be {"mcpkeep_trace":1,...}` + "\n"},
		{"v2.jsonl", strings.Replace(hdr, `"mcpkeep_trace":1`, `"mcpkeep_trace":2`, 1) + "\n", ":1: unsupported trace version 2 (this mcpkeep reads version 1)\n"},
	}
	for _, row := range rows {
		p := write(row.name, row.body)
		code, out, errOut := runCLI("replay", p)
		if code != 1 || out != "" || errOut != p+row.want {
			t.Errorf("%s: code %d, stdout %q, stderr %q, want %q", row.name, code, out, errOut, p+row.want)
		}
	}
	code, _, errOut := runCLI("replay", filepath.Join(dir, "missing.jsonl"))
	if code != 1 || !strings.Contains(errOut, "missing.jsonl: open") {
		t.Errorf("missing file: code %d, stderr %q", code, errOut)
	}
}

func TestReplayUsage(t *testing.T) {
	if code, _, errOut := runCLI("replay"); code != 2 || !strings.Contains(errOut, "no trace file given") {
		t.Errorf("no file: code %d, stderr %q", code, errOut)
	}
	if code, out, _ := runCLI("replay", "--help"); code != 0 || !strings.Contains(out, "Usage:\n  mcpkeep replay [flags] FILE...") {
		t.Errorf("--help: code %d, stdout %q", code, out)
	}
}
