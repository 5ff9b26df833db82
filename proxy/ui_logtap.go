package proxy

import (
	"context"
	"log/slog"
	"sync"
)

// LogTap is a slog.Handler in front of another that keeps, per server,
// the last stderr tail a supervisor logged (the stderr_tail attribute of
// `connection failed` and `connection lost`, docs/design.md §10): the
// live page shows it (docs/design.md §28). Give the Server a logger on a
// LogTap (Options.Logger) and its page finds it there. Records pass on to
// the next handler unchanged.
type LogTap struct {
	next   slog.Handler
	tails  *tailStore
	server string // from WithAttrs, for records that do not carry it
	group  bool   // under WithGroup: attributes are not the lifecycle's
}

type tailStore struct {
	mu    sync.Mutex
	tails map[string]string
}

// NewLogTap returns a LogTap that passes records on to next.
func NewLogTap(next slog.Handler) *LogTap {
	return &LogTap{next: next, tails: &tailStore{tails: map[string]string{}}}
}

// Enabled is true for warnings and above whatever next's level: the
// losses carry the tails; Handle passes on only what next takes.
func (t *LogTap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || t.next.Enabled(ctx, l)
}

// Handle records the tail of a record that carries one.
func (t *LogTap) Handle(ctx context.Context, r slog.Record) error {
	if !t.group {
		server, tail := t.server, ""
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "server":
				server = a.Value.String()
			case "stderr_tail":
				tail = a.Value.String()
			}
			return true
		})
		if server != "" && tail != "" {
			t.tails.mu.Lock()
			t.tails.tails[server] = tail
			t.tails.mu.Unlock()
		}
	}
	if !t.next.Enabled(ctx, r.Level) {
		return nil
	}
	return t.next.Handle(ctx, r)
}

// WithAttrs keeps a server named once for all records.
func (t *LogTap) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *t
	c.next = t.next.WithAttrs(attrs)
	for _, a := range attrs {
		if a.Key == "server" && !t.group {
			c.server = a.Value.String()
		}
	}
	return &c
}

// WithGroup passes on; attributes in a group are not the lifecycle's.
func (t *LogTap) WithGroup(name string) slog.Handler {
	c := *t
	c.next = t.next.WithGroup(name)
	c.group = true
	return &c
}

// Tail is server's last logged stderr tail ("" when none).
func (t *LogTap) Tail(server string) string {
	t.tails.mu.Lock()
	defer t.tails.mu.Unlock()
	return t.tails.tails[server]
}
