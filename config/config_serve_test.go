package config

import (
	"testing"
	"time"
)

// The serving commands hold calls through a short outage by default
// (docs/design.md §6): an unwritten waitForReadyMs becomes 10 s there; a
// written one, 0 included, stays; the parser itself keeps the library's
// fail-fast default.
func TestForServingWaitForReady(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"waitForReadyMs": 2500, "mcpServers": {
		"plain": {"command": "a"},
		"fast":  {"command": "b", "waitForReadyMs": 0},
		"long":  {"command": "c", "waitForReadyMs": 30000}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bare, _, err := Parse([]byte(`{"mcpServers": {"plain": {"command": "a"}, "fast": {"command": "b", "waitForReadyMs": 0}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := bare.Servers[0].WaitForReady; w != 0 {
		t.Fatalf("the parser's default = %v, want 0 (fail fast: the library's)", w)
	}
	bare.ForServing()
	want := map[string]time.Duration{"plain": ServeWaitForReady, "fast": 0}
	for _, s := range bare.Servers {
		if s.WaitForReady != want[s.Name] {
			t.Errorf("%s: WaitForReady %v for serving, want %v", s.Name, s.WaitForReady, want[s.Name])
		}
	}
	cfg.ForServing()
	want = map[string]time.Duration{"plain": 2500 * time.Millisecond, "fast": 0, "long": 30 * time.Second}
	for _, s := range cfg.Servers {
		if s.WaitForReady != want[s.Name] {
			t.Errorf("%s: WaitForReady %v for serving, want %v (written at the top level or per server)", s.Name, s.WaitForReady, want[s.Name])
		}
	}
}
