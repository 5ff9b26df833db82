package benchsuite

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// exitLine is what the fixture writes to stderr right before a scripted
// exit ("fixture: exiting with status 4 (die tool)"): the moment it is
// read is the fixture's own report of its exit, within the reader's
// wake-up.
const exitLine = "exiting with status"

// exitMark holds the time the last exit report was read.
type exitMark struct {
	mu sync.Mutex
	at time.Time
}

func (m *exitMark) set(t time.Time) {
	m.mu.Lock()
	m.at = t
	m.mu.Unlock()
}

func (m *exitMark) get() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at
}

// exitHandler is a slog.Handler for transport.Stdio's Logger, which gets
// the child's stderr line by line (message "stderr", attribute "line")
// from the transport's own reader: it marks exit reports, drops the rest.
type exitHandler struct{ m *exitMark }

func (h exitHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h exitHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "stderr" {
		return nil
	}
	now := time.Now()
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" && strings.Contains(a.Value.String(), exitLine) {
			h.m.set(now)
			return false
		}
		return true
	})
	return nil
}

func (h exitHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h exitHandler) WithGroup(string) slog.Handler      { return h }
