package config

import (
	"fmt"
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
}

// Task modes.
const (
	TasksAuto   = "auto"
	TasksAlways = "always"
	TasksNever  = "never"
)

// DefaultTaskGrace is "graceMs" when not written.
const DefaultTaskGrace = time.Second

// DefaultTasks is the policy of a server without a "tasks" block.
var DefaultTasks = Tasks{Mode: TasksAuto, Grace: DefaultTaskGrace}

const tasksKeys = "mode, graceMs, ttlMs"

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
		default:
			return t, ruleError(f.path, "unknown key (tasks keys: %s)", tasksKeys)
		}
	}
	return t, nil
}

// String is the policy as `mcpkeep check` prints it.
func (t Tasks) String() string {
	s := fmt.Sprintf("mode %s, grace %v", t.Mode, t.Grace)
	if t.TTL > 0 {
		s += fmt.Sprintf(", ttl %v", t.TTL)
	}
	return s
}
