package mcpkeep

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// The rows out of lost: released (retry, give up, or wait for a manual
// reconnect) at the lost generation's close barrier, and stuck when the
// barrier does not complete in time.

// enterLost performs the effects of entering lost: record why, log the
// row's declared message (connection failed, connection lost; a manual
// reconnect logs none), and start g's teardown. Released follows at g's
// close barrier.
func (lc *lifecycle) enterLost(t fsm.Transition, g *generation, err error) {
	lc.lastErr = err
	if t.Log != "" {
		lc.log(slog.LevelWarn, t.Log, g, lc.lossAttrs(g, err)...)
	}
	lc.endGen(g)
	lc.emit(t, g, err)
}

func (lc *lifecycle) lossAttrs(g *generation, err error) []slog.Attr {
	attrs := []slog.Attr{slog.Int("attempt", lc.budget.Attempt()), slog.Any("err", err)}
	if g.tg != nil {
		ex := g.tg.Exit()
		if ex.Status != "" {
			attrs = append(attrs, slog.String("exit", ex.Status))
		}
		if ex.StderrTail != "" {
			attrs = append(attrs, slog.String("stderr_tail", ex.StderrTail))
		}
	}
	return attrs
}

// endGen starts g's teardown: cancel its context (in-flight calls fail
// now), close the session, end the transport, and arm the barrier
// deadline. Idempotent.
func (lc *lifecycle) endGen(g *generation) {
	if g.ending {
		return
	}
	g.ending = true
	// Publish the state that ends g before g's context is cancelled: a
	// caller woken by the cancellation must not read the old snapshot.
	lc.publish()
	if lc.s.live.Load() == g {
		lc.s.live.Store(nil)
	}
	stopTimer(&g.connectTimer)
	stopTimer(&g.deferTimer)
	stopTimer(&g.stableTimer)
	stopTimer(&g.idleTimer)
	stopTimer(&g.syncTimer)
	g.cancel()
	g.endCalls()
	g.openCalls() // the requests an idle stop held find g ended
	if !g.started {
		// A deferred attempt never ran: nothing to wait for.
		g.attemptDone, g.closeDone, g.gone = true, true, true
		return
	}
	if g.cs != nil && !g.closing {
		lc.startCloser(g)
	}
	if g.tg != nil {
		if g.established {
			g.tg.Terminate()
		} else {
			abort(g.tg) // it never served: no stdin grace (R30)
		}
	}
	n := g.n
	g.termTimer = lc.opts.Clock.AfterFunc(lc.opts.TerminationWindow, func() {
		lc.s.send(message{kind: mTermWindow, gen: n})
	})
}

// abort ends a generation that never completed its handshake: without
// the courtesy owed to a server that was serving, where the transport
// has one (transport.Aborter).
func abort(tg transport.Generation) {
	if a, ok := tg.(transport.Aborter); ok {
		a.Abort()
		return
	}
	tg.Terminate()
}

func (lc *lifecycle) startCloser(g *generation) {
	g.closing = true
	lc.s.wg.Add(1)
	go lc.s.closeSession(g)
}

func (lc *lifecycle) onCloseReturned(m message) {
	if g := lc.gens[m.gen]; g != nil {
		g.closeDone = true
		lc.checkBarrier(g)
	}
}

func (lc *lifecycle) onGone(m message) {
	if g := lc.gens[m.gen]; g != nil {
		g.gone = true
		lc.checkBarrier(g)
	}
}

// checkBarrier completes g's barrier when everything behind it is proven
// released, and moves the lifecycle on if it was waiting for that: lost
// waits for the current generation's barrier, a deferred attempt for
// every older one, draining for all.
func (lc *lifecycle) checkBarrier(g *generation) {
	if g.barrierDone || !g.ending || !g.barrierComplete() {
		return
	}
	g.barrierDone = true
	stopTimer(&g.termTimer)
	// Nothing of g is left to report: later signals for it are stale.
	delete(lc.gens, g.n)
	switch lc.m.State() {
	case fsm.Lost:
		if g == lc.cur {
			lc.onReleased(g)
		}
	case fsm.Connecting:
		if c := lc.cur; c.deferred && !c.ending && len(lc.barrierPending(c)) == 0 {
			lc.startAttempt(c)
		}
	case fsm.Draining:
		lc.checkDrained()
	}
}

// onReleased: the lost generation is closed; retry, give up, or wait for
// a manual reconnect, as the guards on released decide.
func (lc *lifecycle) onReleased(g *generation) {
	if g.tg != nil {
		lc.lastErr = signInCause(g.tg, lc.lastErr)
	}
	demand := lc.demandPending
	t, ok := lc.fire(fsm.Released, of(g))
	if !ok {
		return
	}
	switch t.Guard.Key {
	case fsm.StoppingForIdle.Key:
		lc.onIdle(t, g, demand)
		return
	case fsm.BudgetLeft.Key:
		lc.armRetry(g)
	case fsm.BudgetSpent.Key:
		lc.unregister()
		lc.log(slog.LevelError, "gave up", g,
			slog.Int("attempt", lc.budget.Attempt()), slog.Int("max_attempts", lc.opts.policy.MaxAttempts),
			slog.Any("err", lc.lastErr))
	case fsm.SignIn.Key:
		// No retry can help: the tools stay and fail with the command to
		// run, so the host's calls say what to do.
		lc.log(slog.LevelError, "sign-in required", g, slog.Any("err", lc.lastErr))
	default:
		lc.log(slog.LevelError, "reconnect disabled", g, slog.Any("err", lc.lastErr))
	}
	lc.emit(t, g, lc.lastErr)
}

// onTermWindow: g's barrier did not complete in time. In lost the guard
// admits only the current generation's deadline: fail closed, never start
// another process while this one may live. Elsewhere the deadline means
// nothing (draining has its own, a deferred attempt its own bound).
func (lc *lifecycle) onTermWindow(m message) {
	t, ok := lc.fire(fsm.Stuck, m)
	if !ok {
		return
	}
	g := lc.gens[m.gen]
	lc.lastErr = fmt.Errorf("gen %d: %w (%s)", g.n, ErrStuck, lc.opts.TerminationWindow)
	lc.unregister()
	lc.log(slog.LevelError, "gave up", g,
		slog.Int("attempt", lc.budget.Attempt()), slog.Int("max_attempts", lc.opts.policy.MaxAttempts),
		slog.Any("err", lc.lastErr))
	lc.emit(t, g, lc.lastErr)
}

// signInCause is err, or the sign-in its transport ended for when err
// does not say so: the SDK flattens the handler's error into a closed
// connection, the transport keeps the cause (docs/design.md §22).
func signInCause(tg transport.Generation, err error) error {
	if errors.Is(err, ErrSignInRequired) {
		return err
	}
	if c := tg.Exit().Cause; errors.Is(c, ErrSignInRequired) {
		return c
	}
	return err
}
