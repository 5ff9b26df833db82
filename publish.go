package mcpkeep

import (
	"context"
	"log/slog"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// What the lifecycle shows the host: the activation outcome for Start,
// the snapshot under the Supervisor's mutex, observers, and logs.

// activationDone reports the first attempt's outcome to Start, once. It
// publishes first: Start's caller (Pool.Apply's, then a proxy's /readyz
// right after a reload) reads State as soon as Start returns and must see
// what the attempt settled on, not the snapshot New made.
func (lc *lifecycle) activationDone(err error) {
	if lc.activated {
		return
	}
	lc.activated = true
	lc.publish()
	if h := lc.s.testHooks; h != nil && h.activated != nil {
		h.activated()
	}
	lc.s.mu.Lock()
	act := lc.s.mu.activation
	lc.s.mu.Unlock()
	act <- err
}

// emit tells observers about t, after publishing the snapshot so an
// observer that reads State sees the state it was told about.
func (lc *lifecycle) emit(t fsm.Transition, g *generation, err error) {
	lc.notify(t, g, err, false)
}

// notify publishes and tells the observers of t; coalesced marks a list
// change that was already pending (see Transition.Coalesced).
func (lc *lifecycle) notify(t fsm.Transition, g *generation, err error, coalesced bool) {
	lc.publish()
	var n uint64
	var cause StartCause
	if g != nil {
		n = g.n
		if t.From == fsm.Connecting && t.To != fsm.Connecting {
			cause = g.cause
		}
	}
	lc.s.obs.notify(Transition{Cause: cause,
		Server: lc.opts.Name, Gen: n, From: t.From, To: t.To, Event: t.Event, Guard: t.Guard.Name,
		Attempt: lc.budget.Attempt(), NextRetry: lc.nextRetry, Err: err, At: lc.opts.Clock.Now(),
		Coalesced: coalesced,
	})
}

// publish refreshes the snapshot and wakes its waiters when it changed.
func (lc *lifecycle) publish() {
	var n uint64
	if lc.cur != nil {
		n = lc.cur.n
	}
	snap := Snapshot{
		Server: lc.opts.Name, State: lc.m.State(), Gen: n,
		Attempt: lc.budget.Attempt(), MaxAttempts: lc.opts.policy.MaxAttempts,
		NextRetry: lc.nextRetry, LastErr: lc.lastErr, Started: true,
		Tools: lc.tools, Prompts: len(lc.listed.prompts), Resources: len(lc.listed.resources), Templates: len(lc.listed.templates),
		Cached: lc.hinted, Starting: lc.starting(), IdleStopping: lc.idleStopping,
		Lazy: lc.opts.Lazy, IdleStop: max(lc.opts.idleStop, 0),
	}
	s := lc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameSnapshot(snap, s.mu.snap) {
		return
	}
	s.mu.snap = snap
	close(s.mu.changed)
	s.mu.changed = make(chan struct{})
}

func (lc *lifecycle) log(level slog.Level, msg string, g *generation, attrs ...slog.Attr) {
	var n uint64
	if g != nil {
		n = g.n
	}
	all := append([]slog.Attr{slog.String("server", lc.opts.Name), slog.Uint64("gen", n)}, attrs...)
	lc.opts.Logger.LogAttrs(context.Background(), level, msg, all...)
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
