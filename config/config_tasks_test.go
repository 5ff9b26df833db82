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
	if got := cfg.Servers[0].Tasks; !got.Equal(DefaultTasks) {
		t.Fatalf("default %+v, want %+v", got, DefaultTasks)
	}
	cfg, err = parse(`, "tasks": {"mode": "always", "graceMs": 0, "ttlMs": 60000}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Tasks; !got.Equal(Tasks{Mode: TasksAlways, TTL: time.Minute}) {
		t.Fatalf("got %+v", got)
	}
	for _, c := range []struct{ block, path, rule string }{
		{`, "tasks": {"mode": "sometimes"}`, "mcpServers.s.tasks.mode", `must be "auto", "always" or "never"`},
		{`, "tasks": {"graceMs": -1}`, "mcpServers.s.tasks.graceMs", "must be >= 0"},
		{`, "tasks": {"ttlMs": 0}`, "mcpServers.s.tasks.ttlMs", "must be > 0"},
		{`, "tasks": {"ttl": 5}`, "mcpServers.s.tasks.ttl", "unknown key (tasks keys: mode, graceMs, ttlMs, tools)"},
		{`, "tasks": "auto"`, "mcpServers.s.tasks", "object"},
	} {
		_, err := parse(c.block)
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: %v, want an error at %s: %s", c.block, err, c.path, c.rule)
		}
	}
}

// TestTasksToolPolicy: "tools" gives a tool its own mode, "required"
// among them; a bad one names mcpServers.<name>.tasks.tools.<tool>.
func TestTasksToolPolicy(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers": {"s": {"command": "x", "tasks": {"mode": "auto",
		"tools": {"confirm_delete": "always", "failing_job": "required", "greet": "never"}}}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	pol := cfg.Servers[0].Tasks
	for tool, want := range map[string]string{"confirm_delete": TasksAlways, "failing_job": TasksRequired, "greet": TasksNever, "not_offered": TasksAuto} {
		if got := pol.ModeFor(tool); got != want {
			t.Errorf("ModeFor(%s) = %q, want %q", tool, got, want)
		}
	}
	if pol.Equal(DefaultTasks) || !pol.Equal(Tasks{Mode: TasksAuto, Grace: DefaultTaskGrace, Tools: map[string]string{"confirm_delete": "always", "failing_job": "required", "greet": "never"}}) {
		t.Errorf("Equal: %+v", pol)
	}
	for _, c := range []struct{ block, path, rule string }{
		{`{"tools": {"x": "sometimes"}}`, "mcpServers.s.tasks.tools.x", `must be "auto", "always", "never" or "required", got "sometimes"`},
		{`{"tools": {"x": 1}}`, "mcpServers.s.tasks.tools.x", "must be a string"},
		{`{"tools": ["x"]}`, "mcpServers.s.tasks.tools", "object"},
		{`{"mode": "required"}`, "mcpServers.s.tasks.mode", `must be "auto", "always" or "never"`},
	} {
		_, _, err := Parse([]byte(`{"mcpServers": {"s": {"command": "x", "tasks": `+c.block+`}}}`), func(string) (string, bool) { return "", false })
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: %v, want an error at %s: %s", c.block, err, c.path, c.rule)
		}
	}
}
