package mcpkeep

import (
	"github.com/mcpkeep/mcpkeep/fsm"
)

// The rows out of established: closed, stable, tools_changed (also in
// connecting), and the tools sync the last one starts. reconnect and
// dispose are in backoff.go and dispose.go.

// onSessionEnded: established → lost when the current session ends.
func (lc *lifecycle) onSessionEnded(m message) {
	t, ok := lc.fire(fsm.Closed, m)
	if !ok {
		return
	}
	g := lc.gens[m.gen]
	lc.enterLost(t, g, m.err)
	lc.checkBarrier(g)
}

// onStable: the connection stayed up for the stability window.
func (lc *lifecycle) onStable(m message) {
	t, ok := lc.fire(fsm.Stable, m)
	if !ok {
		return
	}
	lc.budget.Reset()
	lc.emit(t, lc.gens[m.gen], nil)
}

// onToolsChanged: while connecting the activation's own sync is still to
// come, so the change is only remembered; once established one sync is
// enqueued (coalesced).
func (lc *lifecycle) onToolsChanged(m message) {
	t, ok := lc.fire(fsm.ToolsChanged, m)
	if !ok {
		return
	}
	g := lc.gens[m.gen]
	coalesced := g.pending&kindTools != 0
	lc.listChanged(g, kindTools)
	lc.notify(t, g, nil, coalesced)
}

// onCatalogChanged: prompts or resources list_changed, as tools_changed.
func (lc *lifecycle) onCatalogChanged(m message) {
	t, ok := lc.fire(fsm.CatalogChanged, m)
	if !ok {
		return
	}
	g := lc.gens[m.gen]
	coalesced := m.kinds&^g.pending == 0
	lc.listChanged(g, m.kinds)
	lc.notify(t, g, nil, coalesced)
}

func (lc *lifecycle) listChanged(g *generation, k listKinds) {
	switch lc.m.State() {
	case fsm.Connecting:
		g.pending |= k
	case fsm.Established:
		lc.requestSync(g, k)
	}
}

// requestSync enqueues a sync of the kinds k for g. One queue serves all
// kinds: one sync runs at a time, and a kind that is already pending is
// not enqueued again, so a storm of notifications gives O(1) syncs per
// kind. The queue is g's own, so an older generation's late sync can
// neither run beside it nor swallow its change (R21).
func (lc *lifecycle) requestSync(g *generation, k listKinds) {
	g.pending |= k
	if g.syncing == 0 {
		lc.startSync(g)
	}
}

// startSync runs the next pending kind of g.
func (lc *lifecycle) startSync(g *generation) {
	k := g.pending.lowest()
	g.pending &^= k
	g.syncing = k
	lc.syncs++
	lc.s.wg.Add(1)
	go lc.s.syncLists(g, k)
}

// onSyncDone takes a sync's outcome. It is not an event of the table: the
// result is applied only for the current established generation, and the
// generation's own queue decides what syncs next.
func (lc *lifecycle) onSyncDone(m message) {
	lc.syncs--
	g := lc.gens[m.gen]
	if g != nil {
		g.syncing = 0
	}
	if lc.m.State() == fsm.Draining {
		lc.checkDrained()
		return
	}
	if g == nil || g != lc.cur || lc.m.State() != fsm.Established {
		lc.drop()
		return
	}
	if m.err != nil {
		lc.syncFailed(g, m.kinds, m.err)
	} else if err := lc.apply(g, m.lists); err != nil {
		// The sinks left the previous registrations intact (R20).
		lc.syncFailed(g, m.kinds, err)
	}
	lc.publish()
	if g.pending != 0 {
		lc.startSync(g)
	}
}
