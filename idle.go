package mcpkeep

import (
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// The rows of lazy start and idle stop (docs/design.md §20): a lazy server
// with a cached catalog starts idle (no process, its catalog listed); the
// first request that needs it fires demand; an established server with an
// idle stop is stopped through its close barrier once it had nothing to do
// for the idle window, and returns to idle. An idle stop is not an outage:
// no retry is spent, the catalog stays, the host is told nothing.

// DefaultIdleStop is the idle stop of a lazy server that sets none.
const DefaultIdleStop = 10 * time.Minute

// StartCause says why a generation was started (Transition.Cause).
type StartCause uint8

const (
	// StartNone: the transition started no generation.
	StartNone StartCause = iota
	// StartStartup: the first generation of Start.
	StartStartup
	// StartDemand: a request needed an idle server.
	StartDemand
	// StartRecovery: a retry after a loss, or a manual reconnect.
	StartRecovery
)

func (c StartCause) String() string {
	switch c {
	case StartStartup:
		return "startup"
	case StartDemand:
		return "demand"
	case StartRecovery:
		return "recovery"
	}
	return ""
}

// useBegin and useEnd bracket every request: the count is what
// Snapshot.InFlight shows (docs/design.md §28) and, when an idle stop is
// set, what the idle timer's guard reads with the time of the last use
// (only then is the clock read: the call path pays two atomic adds
// otherwise).
func (s *Supervisor) useBegin() {
	s.active.Add(1)
	if s.opts.idleStop > 0 {
		s.lastUse.Store(s.opts.Clock.Now().UnixNano())
	}
}

func (s *Supervisor) useEnd() {
	if s.opts.idleStop <= 0 {
		s.active.Add(-1)
		return
	}
	s.lastUse.Store(s.opts.Clock.Now().UnixNano())
	if s.active.Add(-1) == 0 && s.syncHold.Load() {
		// A demand start's lists wait for this (holdSync).
		if g := s.live.Load(); g != nil {
			s.send(message{kind: mSyncRelease, gen: g.n})
		}
	}
}

// busy: a request is in flight, a resource subscription is held, or the
// last request ended less than the idle window ago.
func (s *Supervisor) busy() bool {
	if s.inUse() {
		return true
	}
	last := s.lastUse.Load()
	return last != 0 && s.opts.Clock.Now().UnixNano()-last < int64(s.opts.idleStop)
}

// inUse: a request is in flight or a resource subscription is held (what
// a person's idle stop waits for: it does not wait for the window).
func (s *Supervisor) inUse() bool {
	if s.active.Load() > 0 {
		return true
	}
	s.sticky.Lock()
	defer s.sticky.Unlock()
	return len(s.sticky.subs) > 0
}

// idleRemaining is how long after now the idle window of the last request
// ends (a full window while a request or a subscription holds it).
func (s *Supervisor) idleRemaining() time.Duration {
	if last := s.lastUse.Load(); last != 0 && s.active.Load() == 0 {
		if d := time.Duration(last + int64(s.opts.idleStop) - s.opts.Clock.Now().UnixNano()); d > 0 {
			return d
		}
	}
	return s.opts.idleStop
}

// armIdle arms g's idle timer, when the server has an idle stop.
func (lc *lifecycle) armIdle(g *generation, d time.Duration) {
	if lc.opts.idleStop <= 0 {
		return
	}
	stopTimer(&g.idleTimer)
	n := g.n
	g.idleTimer = lc.opts.Clock.AfterFunc(d, func() {
		lc.s.send(message{kind: mIdleTimeout, gen: n})
	})
}

// onIdleTimeout: established → lost for an idle stop when the guard finds
// the server quiet (docs/design.md §20). The generation is closed to new
// requests first and the guard reads what is in flight only then: a
// request counted before the close holds the server up, and one that
// reaches the generation after it waits (generation.admitted) and is
// served by the next generation. If the guard refuses, the stop backs
// out: the generation takes requests again, and its timer is armed for
// the end of the window after its last request.
func (lc *lifecycle) onIdleTimeout(m message) {
	g := lc.gens[m.gen]
	closed := g != nil && g == lc.cur && lc.m.State() == fsm.Established && !g.ending
	if closed {
		g.closeCalls()
		if h := lc.s.testHooks; h != nil && h.idleClosed != nil {
			h.idleClosed()
		}
	}
	t, ok := lc.fire(fsm.IdleTimeout, m)
	if !ok {
		if closed {
			g.openCalls()
			lc.armIdle(g, lc.s.idleRemaining())
		}
		return
	}
	g.idleTimer = nil
	lc.stopForIdle(t, g, slog.Duration("idle", lc.opts.idleStop))
}

// stopForIdle ends g, closed to new requests and found quiet, for an idle
// stop (the timer's or a person's, stopidle.go): released at its barrier
// leads to idle.
func (lc *lifecycle) stopForIdle(t fsm.Transition, g *generation, why slog.Attr) {
	if h := lc.s.testHooks; h != nil && h.idleStop != nil {
		h.idleStop()
	}
	lc.idleStopping = true
	lc.log(slog.LevelInfo, "idle stop", g, why)
	lc.enterLost(t, g, nil)
	lc.checkBarrier(g)
}

// onIdle: lost → idle at the stopped generation's barrier. A generation
// that served until a clean idle stop was stable: the budget is reset as
// the stability window would have (an idle stop shorter than the window
// cancelled that timer, and outages hours apart added up until the
// server was given up). A demand that came during the barrier starts the
// next generation now: never two processes (I1).
func (lc *lifecycle) onIdle(t fsm.Transition, g *generation, demand bool) {
	lc.budget.Reset()
	lc.emit(t, g, nil)
	if demand {
		lc.onDemand(message{kind: mDemand})
	}
}

// leaveIdleStop clears the idle stop's flags on the way into to, so none
// survives a path out of lost (released into idle or an outage, stuck,
// dispose) nor a demand's connecting: idleStopping and demandPending
// mean something only in lost, demanded only in connecting. fire calls
// it after every transition (released reads demandPending before).
func (lc *lifecycle) leaveIdleStop(to fsm.State) {
	if to == fsm.Lost {
		return
	}
	lc.idleStopping, lc.demandPending = false, false
	if to != fsm.Connecting {
		lc.demanded = false
	}
}

// onDemand: idle → connecting for a request. During an idle stop's
// barrier the demand is kept for the end of the barrier (see onIdle).
// A server already starting or serving has nothing to do with a wake-up
// (requests send one each, and again while they wait): it is not an
// event of the machine there, so it is neither fired nor counted as a
// drop (Stats.Dropped counts stale events, I7).
func (lc *lifecycle) onDemand(m message) {
	if lc.idleStopping {
		lc.demandPending = true
		return
	}
	switch lc.m.State() {
	case fsm.Connecting, fsm.Established:
		return
	}
	t, ok := lc.fire(fsm.Demand, m)
	if !ok {
		return
	}
	lc.demanded = true
	g := lc.enterConnecting()
	g.retry = false // a demand start is not a recovery
	g.cause = StartDemand
	lc.emit(t, g, nil)
}

// syncHoldMax bounds how long a demand start holds its lists back for the
// requests that woke it.
const syncHoldMax = time.Second

// holdSync: a demand-started generation lists its kinds k once the
// requests that woke it ended, at most syncHoldMax after it was
// established (docs/design.md §20). Its catalog is the registered one
// meanwhile; a sync beside the first call would cost that call the
// server's time (the server answers the lists and the call at once). A
// server without an idle stop counts no requests: it lists at once.
func (lc *lifecycle) holdSync(g *generation, k listKinds) {
	if lc.opts.idleStop <= 0 {
		lc.requestSync(g, k)
		return
	}
	g.syncHeld |= k
	lc.s.syncHold.Store(true)
	n := g.n
	stopTimer(&g.syncTimer)
	g.syncTimer = lc.opts.Clock.AfterFunc(syncHoldMax, func() {
		lc.s.send(message{kind: mSyncRelease, gen: n})
	})
	if lc.s.active.Load() == 0 {
		// The requests ended before it was established.
		lc.releaseSync(g)
	}
}

// onSyncRelease starts g's held sync (the requests ended, or the hold's
// bound passed); a stale or repeated release does nothing.
func (lc *lifecycle) onSyncRelease(m message) {
	if g := lc.gens[m.gen]; g != nil {
		lc.releaseSync(g)
	}
}

func (lc *lifecycle) releaseSync(g *generation) {
	if g.syncHeld == 0 {
		return
	}
	k := g.syncHeld
	g.syncHeld = 0
	stopTimer(&g.syncTimer)
	lc.s.syncHold.Store(false)
	if g == lc.cur && lc.m.State() == fsm.Established {
		lc.requestSync(g, k)
	}
}
