package mcpkeep

import (
	"context"
	"log/slog"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
)

func (s *Supervisor) activationDone(err error) {
	if s.activated {
		return
	}
	s.activated = true
	s.activation <- err
}

// emit tells observers about t, after publishing the snapshot so an
// observer that reads State sees the state it was told about.
func (s *Supervisor) emit(t fsm.Transition, g *generation, err error) {
	s.publish()
	var n uint64
	if g != nil {
		n = g.n
	}
	s.obs.notify(Transition{
		Server: s.opts.Name, Gen: n, From: t.From, To: t.To, Event: t.Event, Guard: t.Guard.Name,
		Attempt: s.budget.Attempt(), NextRetry: s.nextRetry, Err: err, At: s.opts.Clock.Now(),
	})
}

// publish refreshes the snapshot and wakes its waiters when it changed.
func (s *Supervisor) publish() {
	var n uint64
	if s.cur != nil {
		n = s.cur.n
	}
	snap := Snapshot{
		Server: s.opts.Name, State: s.m.State(), Gen: n,
		Attempt: s.budget.Attempt(), MaxAttempts: s.opts.policy.MaxAttempts,
		NextRetry: s.nextRetry, LastErr: s.lastErr, Tools: s.toolCount, Started: true,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameSnapshot(snap, s.snap) {
		return
	}
	s.snap = snap
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Supervisor) log(level slog.Level, msg string, g *generation, attrs ...slog.Attr) {
	var n uint64
	if g != nil {
		n = g.n
	}
	all := append([]slog.Attr{slog.String("server", s.opts.Name), slog.Uint64("gen", n)}, attrs...)
	s.opts.Logger.LogAttrs(context.Background(), level, msg, all...)
}

// sameSnapshot compares field by field; errors by identity, guarding
// against error values of uncomparable dynamic types.
func sameSnapshot(a, b Snapshot) (same bool) {
	ea, eb := a.LastErr, b.LastErr
	a.LastErr, b.LastErr = nil, nil
	if a != b {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return ea == eb
}

func stopTimer(t **clock.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}
