package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// One server hangs at its handshake: the host's initialize is answered
// by the init wait (5 s) on a first run, and at once on the next run, when
// the cache lists the healthy server and remembers that the hung one did
// not come (docs/design.md §20). Real processes throughout.
func TestProxyHungServerStartsFromCache(t *testing.T) {
	dir := t.TempDir()
	hung := fixtureServer(t, "hang-init")
	hung["connectTimeoutMs"] = 30000
	cfg := map[string]any{"mcpServers": map[string]any{"ok": fixtureServer(t, "normal"), "hung": hung}}
	run := func() (time.Duration, []string) {
		start := time.Now()
		r := startProxy(t, cfg, "--cache-dir", dir)
		took := time.Since(start)
		names := r.toolNames()
		r.stop()
		return took, names
	}
	first, names := run()
	t.Logf("first run (cold): initialize answered after %v", first)
	if first > 5*time.Second+time.Second {
		t.Errorf("cold start: initialize after %v, want within the 5 s init wait", first)
	}
	if !slices.Equal(names, prefixed("ok", fixtureTools)) {
		t.Errorf("cold start: tools %v", names)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(entries) != 2 {
		t.Fatalf("cache entries after the first run: %v", entries)
	}
	for _, e := range entries {
		fi, err := os.Stat(e)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", e, fi.Mode(), err)
		}
	}
	second, names := run()
	t.Logf("second run (warm): initialize answered after %v", second)
	if second > time.Second {
		t.Errorf("warm start: initialize after %v, want within 1 s", second)
	}
	if !slices.Equal(names, prefixed("ok", fixtureTools)) {
		t.Errorf("warm start: tools %v", names)
	}
}

func TestCacheFlagsConflict(t *testing.T) {
	code, _, errOut := runCLI("proxy", "--config", "x.json", "--no-cache", "--cache-dir", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "--no-cache and --cache-dir") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// A lazy server (real processes): the first run starts it to learn its
// catalog; the next run lists it from the cache without spawning it, and
// the first call starts it (docs/design.md §20).
func TestProxyLazyServerStartsOnDemand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lazy := fixtureServer(t, "normal")
	lazy["start"] = "lazy"
	cfg := map[string]any{"mcpServers": map[string]any{"lz": lazy}}

	r := startProxy(t, cfg, "--cache-dir", dir)
	if got := r.toolNames(); !slices.Equal(got, prefixed("lz", fixtureTools)) {
		t.Fatalf("first run: tools %v", got)
	}
	r.stop()

	r = startProxy(t, cfg, "--cache-dir", dir)
	if got := r.toolNames(); !slices.Equal(got, prefixed("lz", fixtureTools)) {
		t.Fatalf("second run, idle: tools %v", got)
	}
	if pids := r.pids(); len(pids) != 0 {
		t.Fatalf("an idle lazy server was spawned: %v", pids)
	}
	res, err := r.call("lz__echo", map[string]any{"text": "woke"})
	if err != nil || res.IsError || text(res) != "woke" {
		t.Fatalf("first call to the idle server: %v %q", err, text(res))
	}
	if pids := r.waitPids(1); len(pids) != 1 {
		t.Fatalf("after the call: fixture processes %v, want one", pids)
	}
}
