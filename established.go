package mcpkeep

import (
	"log/slog"

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
	switch lc.m.State() {
	case fsm.Connecting:
		g.syncDirty = true
	case fsm.Established:
		lc.requestSync(g)
	}
	lc.emit(t, g, nil)
}

// requestSync runs one tools sync for g, or marks g's running one dirty so
// exactly one more follows: a storm of notifications gives O(1) syncs.
// The state is g's own, so an older generation's late sync can neither
// run beside it nor swallow its change (R21).
func (lc *lifecycle) requestSync(g *generation) {
	if g.syncing {
		g.syncDirty = true
		return
	}
	g.syncing, g.syncDirty = true, false
	lc.syncs++
	lc.s.wg.Add(1)
	go lc.s.syncTools(g)
}

// onSyncDone takes a sync's outcome. It is not an event of the table: the
// result is applied only for the current established generation, and the
// generation's own dirty flag decides whether one more sync follows.
func (lc *lifecycle) onSyncDone(m message) {
	lc.syncs--
	g := lc.gens[m.gen]
	if g != nil {
		g.syncing = false
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
		lc.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", m.err))
	} else if err := lc.opts.Sink.Replace(lc.opts.Name, g.n, m.defs); err != nil {
		// The sink left the previous registrations intact (R20).
		lc.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	} else {
		lc.toolCount = len(m.defs)
	}
	if g.syncDirty {
		lc.requestSync(g)
	}
}
