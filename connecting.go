package mcpkeep

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// The rows out of connecting: connected, failed (and tools_changed, which
// established.go handles for both states).

// enterConnecting starts generation n+1 (the caller has fired the event
// that leads to connecting). The attempt waits for any older generation's
// barrier first: never two live transports (I1). The wait is bounded by
// the connect timeout on its own timer, so the attempt's connect timeout
// starts only when the attempt does (R25).
func (lc *lifecycle) enterConnecting() *generation {
	g := lc.newGeneration()
	g.retry = g.n > 1
	lc.cur = g
	lc.nextRetry = time.Time{}
	if len(lc.barrierPending(g)) > 0 {
		g.deferred = true
		n := g.n
		g.deferTimer = lc.opts.Clock.AfterFunc(lc.opts.ConnectTimeout, func() {
			lc.s.send(message{kind: mDeferralTimeout, gen: n})
		})
		return g
	}
	lc.startAttempt(g)
	return g
}

func (lc *lifecycle) newGeneration() *generation {
	lc.nextGen++
	g := newGeneration(lc.nextGen)
	lc.gens[g.n] = g
	return g
}

func (lc *lifecycle) startAttempt(g *generation) {
	g.deferred = false
	stopTimer(&g.deferTimer)
	g.started = true
	g.listLater = lc.demanded && (lc.hinted || lc.everEstablished)
	n := g.n
	g.connectTimer = lc.opts.Clock.AfterFunc(lc.opts.ConnectTimeout, func() {
		lc.s.send(message{kind: mConnectTimeout, gen: n})
	})
	lc.s.wg.Add(1)
	go lc.s.attempt(g)
}

// barrierPending lists the generations other than except whose close
// barrier is not complete.
func (lc *lifecycle) barrierPending(except *generation) []uint64 {
	var out []uint64
	for n, g := range lc.gens {
		if g != except && !g.barrierDone {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// onOpened records the attempt's transport and watches its close signal.
func (lc *lifecycle) onOpened(m message) {
	g := lc.gens[m.gen]
	if g == nil {
		// Cannot happen: a generation stays in gens until its barrier,
		// which needs this attempt to finish. Fail closed anyway.
		abort(m.tg)
		return
	}
	g.tg = m.tg
	lc.s.wg.Add(1)
	go lc.s.watchGone(g)
	if g.ending {
		abort(g.tg) // ended while opening: it never served
	}
}

// onAttempt takes the attempt's outcome: connected or failed, as the
// guards decide; then the generation's barrier may move on.
func (lc *lifecycle) onAttempt(m message) {
	g := lc.gens[m.gen]
	if g == nil {
		lc.drop() // cannot happen (see onOpened)
		return
	}
	g.attemptDone = true
	if g.tg == nil {
		g.gone = true // Open failed or never happened: nothing was started
	}
	if m.cs != nil {
		g.cs = m.cs
	}
	if m.err == nil {
		lc.onConnected(g, m)
	} else {
		lc.onFailed(g, m, m.err)
	}
	if g.cs == nil {
		g.closeDone = true // a failed Connect closes its own session
	} else if g.ending && !g.closing {
		lc.startCloser(g)
	}
	lc.checkBarrier(g)
}

// onConnected: connecting → established. The initial registration comes
// first, so the guard is asked before it (a stale result registers
// nothing); a strict activation whose registration fails takes failed.
func (lc *lifecycle) onConnected(g *generation, m message) {
	if !lc.admits(fsm.Connected, m) {
		return
	}
	if g.listLater {
		lc.listLater(g, m.kinds)
	} else if err := lc.apply(g, m.lists); err != nil {
		err = fmt.Errorf("initial tools sync: %w", err)
		if g.activation && lc.opts.FailOnStartupError {
			lc.onFailed(g, m, err)
			return
		}
		lc.lastErr = err
		lc.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	}
	t, ok := lc.fire(fsm.Connected, m)
	if !ok {
		return
	}
	g.established = true
	if g.listLater {
		lc.holdSync(g, m.kinds)
	}
	lc.everEstablished = true
	lc.s.held.up.Store(g.n) // a later hold is another outage's
	lc.demanded = false
	lc.armIdle(g, lc.opts.idleStop)
	stopTimer(&g.connectTimer)
	lc.s.live.Store(g)
	lc.s.served.Store(g.cs.InitializeResult())
	lc.s.wg.Add(1)
	go lc.s.watchSession(g)
	if sa, ok := g.tg.(transport.SessionAware); ok {
		sa.Established(g.cs)
	}
	n := g.n
	g.stableTimer = lc.opts.Clock.AfterFunc(lc.opts.policy.StabilityWindow(), func() {
		lc.s.send(message{kind: mStable, gen: n})
	})
	if g.retry {
		lc.log(slog.LevelInfo, "recovered", g, slog.Int("attempt", lc.budget.Attempt()))
	}
	lc.emit(t, g, nil)
	lc.activationDone(nil)
	if lc.s.stickyVersion() != g.applied.version() {
		// The host changed subscriptions, level or roots after the
		// attempt applied them: bring this generation up to date.
		lc.s.wg.Add(1)
		go lc.s.reconcileLater(g)
	}
	if g.pending != 0 {
		lc.startSync(g) // a list_changed arrived while connecting
	}
}

// onFailed: connecting → lost on the generation's first failure signal;
// the guard drops a stale or repeated one.
func (lc *lifecycle) onFailed(g *generation, m message, err error) {
	t, ok := lc.fire(fsm.Failed, m)
	if !ok {
		return
	}
	g.failed = true
	if g.activation {
		lc.rememberNotComing()
	}
	lc.enterLost(t, g, err)
	lc.activationDone(err)
	if g.activation && lc.opts.FailOnStartupError {
		lc.onDispose(message{kind: mDispose})
		return
	}
	lc.checkBarrier(g)
}

func (lc *lifecycle) onConnectTimeout(m message) {
	lc.onFailed(lc.gens[m.gen], m, fmt.Errorf("%w after %s", ErrConnectTimeout, lc.opts.ConnectTimeout))
}

// onDeferralTimeout: the attempt never started because an older
// generation's barrier is still incomplete. It fails without having
// spawned anything, naming the barrier (not a connect timeout).
func (lc *lifecycle) onDeferralTimeout(m message) {
	g := lc.gens[m.gen]
	var err error
	if g != nil {
		err = fmt.Errorf("gen %d not started: generations %v still closing after %s: %w",
			g.n, lc.barrierPending(g), lc.opts.ConnectTimeout, ErrStuck)
	}
	lc.onFailed(g, m, err)
}
