package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTasksPolicy(t *testing.T) {
	parse := func(block string) (*Config, error) {
		cfg, _, err := Parse([]byte(`{"mcpServers": {"s": {"command": "x"`+block+`}}}`), func(string) (string, bool) { return "", false })
		return cfg, err
	}
	cfg, err := parse(``)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Tasks; got != DefaultTasks {
		t.Fatalf("default %+v, want %+v", got, DefaultTasks)
	}
	cfg, err = parse(`, "tasks": {"mode": "always", "graceMs": 0, "ttlMs": 60000}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Tasks; got != (Tasks{Mode: TasksAlways, TTL: time.Minute}) {
		t.Fatalf("got %+v", got)
	}
	for _, c := range []struct{ block, path, rule string }{
		{`, "tasks": {"mode": "sometimes"}`, "mcpServers.s.tasks.mode", `must be "auto", "always" or "never"`},
		{`, "tasks": {"graceMs": -1}`, "mcpServers.s.tasks.graceMs", "must be >= 0"},
		{`, "tasks": {"ttlMs": 0}`, "mcpServers.s.tasks.ttlMs", "must be > 0"},
		{`, "tasks": {"ttl": 5}`, "mcpServers.s.tasks.ttl", "unknown key (tasks keys: mode, graceMs, ttlMs)"},
		{`, "tasks": "auto"`, "mcpServers.s.tasks", "object"},
	} {
		_, err := parse(c.block)
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: %v, want an error at %s: %s", c.block, err, c.path, c.rule)
		}
	}
}
