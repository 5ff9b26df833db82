package mcpkeep

import (
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// Transition is what observers see for every fired event (docs/design.md §10).
// Internal transitions (tools_changed, stable) have From == To.
type Transition struct {
	Server    string
	Gen       uint64
	From      fsm.State
	To        fsm.State
	Event     fsm.Event
	Guard     string // the name of the row's guard that held ("" when unguarded)
	Attempt   int
	NextRetry time.Time // zero unless To is backing-off
	Err       error     // why, for failed/closed/stuck/gave-up transitions
	At        time.Time // on the supervisor's clock
	// Coalesced marks a tools_changed or catalog_changed whose lists were
	// already pending a sync: it causes no sync of its own. Each sync has
	// one uncoalesced change, so a trace that leaves these out (as
	// TraceObserver does) writes at most one line per sync, however many
	// notifications a server sends (docs/design.md §19).
	Coalesced bool
	// Cause, on the transition that ends a generation's connecting
	// (connected, failed, dispose), says why that generation was started:
	// each start is counted once, when its attempt settles.
	Cause StartCause
}

// Observer receives transitions in order, on the supervisor's own
// goroutine, after the snapshot is published: it must return quickly and
// must not call Dispose, Start, Reconnect or a waiting Call (State is
// fine). A request woken by that publish may be answered before the
// observers have heard of the transition.
type Observer func(Transition)

// observers is a copy-on-write list so the loop reads it without a lock.
type observers struct {
	mu   sync.Mutex // serializes writers
	list []*Observer
	snap []*Observer // replaced on every change; read by the loop under mu
}

func (o *observers) add(fn Observer) (remove func()) {
	p := &fn
	o.mu.Lock()
	o.list = append(o.list, p)
	o.snap = append([]*Observer(nil), o.list...)
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		for i, q := range o.list {
			if q == p {
				o.list = append(o.list[:i:i], o.list[i+1:]...)
				break
			}
		}
		o.snap = append([]*Observer(nil), o.list...)
	}
}

func (o *observers) notify(t Transition) {
	o.mu.Lock()
	snap := o.snap
	o.mu.Unlock()
	for _, fn := range snap {
		(*fn)(t)
	}
}
