package mcpkeep

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Requests held through an outage (docs/design.md §6): a request that
// waits for its server to come back (CallOptions.WaitForReady; the
// proxy's and run's default, waitForReadyMs 10 s) is counted once, and
// the first one of each outage is logged, not every one: a host calling
// every 200 ms through a two-second restart would otherwise log ten
// lines saying the same thing.
type heldCalls struct {
	n atomic.Uint64
	// up is the last generation established (written by the loop);
	// logged is the value of up when a hold was last logged: a hold
	// with up unchanged belongs to an outage already logged.
	up     atomic.Uint64
	logged atomic.Uint64
}

// hold counts one request that starts waiting through an outage, and
// logs the outage's first.
func (s *Supervisor) hold(snap Snapshot, bound time.Duration) {
	s.held.n.Add(1)
	up := s.held.up.Load() + 1 // + 1: an outage before any generation is one too
	if s.held.logged.Swap(up) == up {
		return
	}
	attrs := []slog.Attr{slog.String("server", s.opts.Name), slog.String("state", snap.State.String())}
	if bound > 0 {
		attrs = append(attrs, slog.Duration("bound", bound))
	}
	if !snap.NextRetry.IsZero() {
		attrs = append(attrs, slog.Duration("next_retry", max(snap.NextRetry.Sub(s.opts.Clock.Now()), 0).Round(time.Millisecond)))
	}
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "holding calls until the server is back", attrs...)
}

// CallsHeld counts the requests that waited for their server through an
// outage (docs/design.md §6), exported as mcpkeep_calls_held_total.
func (s *Supervisor) CallsHeld() uint64 { return s.held.n.Load() }
