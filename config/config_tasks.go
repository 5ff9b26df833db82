package config

import (
	"fmt"
	"sort"
	"time"
)

// Tasks is a server's policy for the tasks extension (docs/design.md
// §25): "tasks": {"mode": "auto" | "always" | "never", "graceMs": N,
// "ttlMs": N}. A host that opted in on a tools/call gets a task for it:
// with "auto" when the call is still running after Grace, with "always"
// at once, with "never" not at all (the call is answered as a call).
type Tasks struct {
	Mode  string
	Grace time.Duration
	// TTL is how long a task and its result are kept; 0 is the
	// engine's default.
	TTL time.Duration
	// Tools overrides Mode per tool, keyed by the tool's name as its
	// server offers it ("tools": {"name": mode}); a name the server does
	// not offer is not an error (tool lists change). Nil when not written.
	Tools map[string]string
}

// ModeFor is the mode of the server's tool name: its own entry in Tools,
// else Mode.
func (t Tasks) ModeFor(tool string) string {
	if m, ok := t.Tools[tool]; ok {
		return m
	}
	return t.Mode
}

// Equal reports whether two policies are the same.
func (t Tasks) Equal(o Tasks) bool {
	return t.Mode == o.Mode && t.Grace == o.Grace && t.TTL == o.TTL && equalMaps(t.Tools, o.Tools)
}

// Task modes.
const (
	TasksAuto   = "auto"
	TasksAlways = "always"
	TasksNever  = "never"
	// TasksRequired, for a tool only: a host that declared the extension
	// gets a task at once, one that did not gets -32021 naming it.
	TasksRequired = "required"
)

// DefaultTaskGrace is "graceMs" when not written.
const DefaultTaskGrace = time.Second

// DefaultTasks is the policy of a server without a "tasks" block.
var DefaultTasks = Tasks{Mode: TasksAuto, Grace: DefaultTaskGrace}

const tasksKeys = "mode, graceMs, ttlMs, tools"

// decodeTasks reads a server's "tasks" block; every error names the key
// at fault.
func decodeTasks(m member) (Tasks, error) {
	t := DefaultTasks
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		return t, err
	}
	for _, f := range members {
		if f.null() {
			continue
		}
		switch f.key {
		case "mode":
			s, err := decodeString(f)
			if err != nil {
				return t, err
			}
			switch s {
			case TasksAuto, TasksAlways, TasksNever:
				t.Mode = s
			default:
				return t, ruleError(f.path, "must be %q, %q or %q, got %q", TasksAuto, TasksAlways, TasksNever, s)
			}
		case "graceMs":
			if t.Grace, err = decodeMs(f, true); err != nil {
				return t, err
			}
		case "ttlMs":
			if t.TTL, err = decodeMs(f, false); err != nil {
				return t, err
			}
		case "tools":
			if t.Tools, err = decodeToolModes(f); err != nil {
				return t, err
			}
		default:
			return t, ruleError(f.path, "unknown key (tasks keys: %s)", tasksKeys)
		}
	}
	return t, nil
}

// decodeToolModes reads "tools": {"<tool>": "auto" | "always" | "never" |
// "required"}; an error names mcpServers.<name>.tasks.tools.<tool>.
func decodeToolModes(m member) (map[string]string, error) {
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		return nil, err
	}
	tools := make(map[string]string, len(members))
	for _, f := range members {
		if f.key == "" {
			return nil, ruleError(f.path, "a tool name must not be empty")
		}
		s, err := decodeString(f)
		if err != nil {
			return nil, err
		}
		switch s {
		case TasksAuto, TasksAlways, TasksNever, TasksRequired:
			tools[f.key] = s
		default:
			return nil, ruleError(f.path, "must be %q, %q, %q or %q, got %q", TasksAuto, TasksAlways, TasksNever, TasksRequired, s)
		}
	}
	return tools, nil
}

// String is the policy as `mcpkeep check` prints it.
func (t Tasks) String() string {
	s := fmt.Sprintf("mode %s, grace %v", t.Mode, t.Grace)
	if t.TTL > 0 {
		s += fmt.Sprintf(", ttl %v", t.TTL)
	}
	names := make([]string, 0, len(t.Tools))
	for n := range t.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s += fmt.Sprintf(", %s %s", n, t.Tools[n])
	}
	return s
}
