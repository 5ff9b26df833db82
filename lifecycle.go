package mcpkeep

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lifecycle is the part of a Supervisor that the loop goroutine owns: the
// declared machine and everything its rows read or change. Nothing else
// touches it; every other goroutine reaches it by message (see loop).
//
// Its methods are the handlers of fsm.Table's rows, one file per group of
// rows: connecting.go (connected, failed, the attempt), established.go
// (closed, stable, tools_changed and the tools sync), lost.go (the close
// barrier, released, stuck), backoff.go (retry_due, reconnect) and
// dispose.go (dispose, drained, drain_timeout).
type lifecycle struct {
	s    *Supervisor
	opts *resolved

	m      *fsm.Machine
	budget *backoff.Budget

	// cur is the newest generation: the one connecting, established, or
	// (in lost) the one whose barrier released waits for.
	cur *generation
	// gens holds every generation whose close barrier is not complete.
	gens    map[uint64]*generation
	nextGen uint64

	retryTimer *clock.Timer
	retrySeq   uint64 // identity of the armed retry timer (TimerCurrent)
	nextRetry  time.Time
	drainTimer *clock.Timer

	syncs int // tools syncs running, of any generation (drained waits for them)

	lastErr   error
	tools     int           // tools registered (the Sink keeps the lists)
	listed    listedCatalog // the registered prompts, resources, templates
	finished  bool          // the loop returns after this message
	activated bool          // the activation outcome was reported to Start

	// The catalog cache (docs/design.md §20): raw is the last listing as
	// the server sent it, init its initialize result; hinted while what is
	// registered came from the cache, not from a live generation.
	raw             rawLists
	init            *mcp.InitializeResult
	hinted          bool
	notComing       bool // the cache says (or was told) the server did not come
	everEstablished bool // a generation of this Start was established
	demanded        bool // connecting because a request needed the idle server
	idleStopping    bool // lost for an idle stop: released leads to idle
	demandPending   bool // a demand came during the idle stop's barrier
	saveWarned      bool
	settled         bool // loadHint's answer: Start need not wait (set before the loop runs)

	// rejected counts, per guard key, the events that guard refused.
	rejected map[string]*atomic.Uint64
	// refusedItems counts the listed items left out (logRefused); read
	// by Stats from any goroutine.
	refusedItems atomic.Uint64
}

func newLifecycle(s *Supervisor) *lifecycle {
	lc := &lifecycle{
		s:        s,
		opts:     &s.opts,
		m:        fsm.New(),
		budget:   backoff.NewBudget(s.opts.policy),
		gens:     make(map[uint64]*generation),
		rejected: make(map[string]*atomic.Uint64, len(fsm.Guards)),
	}
	for _, g := range fsm.Guards {
		lc.rejected[g.Key] = new(atomic.Uint64)
	}
	return lc
}

// facts is the one place where a message becomes what the guards read
// (docs/design.md §3): whether the generation (or the timer) it speaks for
// is the current one, whether that generation already failed, the policy,
// the budget, and whether the last loss needs a person to sign in.
func (lc *lifecycle) facts(m message) fsm.Facts {
	f := fsm.Facts{
		ReconnectDisabled: !lc.opts.policy.Enabled,
		BudgetSpent:       !lc.budget.Left(),
		SignInRequired:    errors.Is(lc.lastErr, ErrSignInRequired),
		IdleStop:          lc.idleStopping,
	}
	switch m.kind {
	case mRetryDue:
		f.Stale = m.seq != lc.retrySeq
	case mDeferralTimeout:
		// The timer of a deferral that ended (the attempt started) is stale.
		g := lc.gens[m.gen]
		f.Stale = g == nil || g != lc.cur || !g.deferred
	case mReconnect, mDispose, mDrainTimeout, mDemand:
		// The host's requests and the drain deadline speak for the
		// supervisor, not for a generation.
	default:
		g := lc.gens[m.gen]
		f.Stale = g == nil || g != lc.cur
		f.Repeated = g != nil && g.failed
		switch m.kind {
		case mIdleTimeout:
			// Read after onIdleTimeout closed g to new requests.
			f.CallsOpen = g != nil && g.callsOpen()
			f.Busy = lc.s.busy()
		case mStopIdle:
			// A person's stop (onStopIdle): the window is not waited for.
			f.CallsOpen = g != nil && g.callsOpen()
			f.Busy = lc.s.inUse()
		}
	}
	return f
}

// fire applies ev with the facts of m, the message that caused it. An
// event whose guard does not hold (a stale generation or timer, a
// repeated failure) or that is not declared in the current state is the
// drop: nothing changes, and it is counted.
func (lc *lifecycle) fire(ev fsm.Event, m message) (fsm.Transition, bool) {
	f := lc.facts(m)
	t, err := lc.m.Fire(ev, f)
	if err != nil {
		lc.refuse(ev, f)
		return t, false
	}
	lc.leaveIdleStop(t.To)
	return t, true
}

// admits reports whether ev would be taken for m, without firing: a
// handler with effects that must precede the transition (the initial
// registration before connected) asks first. A refusal is the drop.
func (lc *lifecycle) admits(ev fsm.Event, m message) bool {
	f := lc.facts(m)
	if _, err := fsm.Resolve(lc.m.State(), ev, f); err != nil {
		lc.refuse(ev, f)
		return false
	}
	return true
}

// refuse counts the drop of ev and, per guard, what refused it.
func (lc *lifecycle) refuse(ev fsm.Event, f fsm.Facts) {
	lc.drop()
	fsm.Rejecting(lc.m.State(), ev, f, func(g fsm.Guard) { lc.rejected[g.Key].Add(1) })
}

func (lc *lifecycle) drop() { lc.s.dropped.Add(1) }

// of is the message on whose behalf the loop fires an event it derived
// itself (released at g's barrier, stuck at g's deadline).
func of(g *generation) message { return message{kind: mDerived, gen: g.n} }
