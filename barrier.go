package mcpkeep

import (
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// endGen starts g's teardown: cancel its context (in-flight calls fail
// now), close the session, terminate the transport, and arm the barrier
// deadline. Idempotent.
func (s *Supervisor) endGen(g *generation) {
	if g.ending {
		return
	}
	g.ending = true
	// Publish the state that ends g before g's context is cancelled: a
	// caller woken by the cancellation must not read the old snapshot.
	s.publish()
	if s.live.Load() == g {
		s.live.Store(nil)
	}
	stopTimer(&g.connectTimer)
	stopTimer(&g.stableTimer)
	g.cancel()
	g.endCalls()
	if s.syncing == g {
		s.syncDirty = false
	}
	if !g.started {
		// A deferred attempt never ran: nothing to wait for.
		g.attemptDone, g.closeDone, g.gone = true, true, true
		return
	}
	if g.cs != nil && !g.closing {
		s.startCloser(g)
	}
	if g.tg != nil {
		g.tg.Terminate()
	}
	n := g.n
	g.termTimer = s.opts.Clock.AfterFunc(s.opts.TerminationWindow, func() {
		s.send(message{kind: mTermWindow, gen: n})
	})
}

func (s *Supervisor) startCloser(g *generation) {
	g.closing = true
	s.wg.Add(1)
	go s.closeSession(g)
}

// checkBarrier completes g's barrier when everything behind it is proven
// released, and moves the lifecycle on if it was waiting for that.
func (s *Supervisor) checkBarrier(g *generation) {
	if g.barrierDone || !g.ending || !g.barrierComplete() {
		return
	}
	g.barrierDone = true
	stopTimer(&g.termTimer)
	// Nothing of g is left to report: later signals for it are stale.
	delete(s.gens, g.n)
	switch s.m.State() {
	case fsm.Lost:
		if g == s.lostGen {
			s.onReleased(g)
		}
	case fsm.Connecting:
		if c := s.cur; c.deferred && !c.ending && !s.barrierPending(c) {
			s.startAttempt(c)
		}
	case fsm.Draining:
		s.checkDrained()
	}
}

// onTermWindow: g's barrier did not complete in time. In lost, fail
// closed: never start another process while this one may live.
func (s *Supervisor) onTermWindow(n uint64) {
	g := s.gens[n]
	if g == nil || g.barrierDone {
		s.drop()
		return
	}
	if s.m.State() != fsm.Lost || g != s.lostGen {
		return // draining has its own deadline; connecting waits deferred
	}
	t, ok := s.fire(fsm.Stuck, fsm.Facts{})
	if !ok {
		return
	}
	s.lastErr = fmt.Errorf("gen %d: %w (%s)", g.n, ErrStuck, s.opts.TerminationWindow)
	s.unregister()
	s.log(slog.LevelError, "gave up", g,
		slog.Int("attempt", s.budget.Attempt()), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
		slog.Any("err", s.lastErr))
	s.emit(t, g, s.lastErr)
}
