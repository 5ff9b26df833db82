package mcpkeep

import (
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
)

func (s *Supervisor) onToolsChanged(n uint64) {
	g := s.gens[n]
	stale := g == nil || g != s.cur || g.ending
	t, ok := s.fire(fsm.ToolsChanged, fsm.Facts{Stale: stale})
	if !ok {
		return
	}
	switch s.m.State() {
	case fsm.Connecting:
		g.syncDirty = true
	case fsm.Established:
		s.requestSync(g)
	}
	s.emit(t, g, nil)
}

// requestSync runs one tools sync for g, or marks the running one dirty so
// exactly one more follows: a storm of notifications gives O(1) syncs.
func (s *Supervisor) requestSync(g *generation) {
	if s.syncing != nil {
		s.syncDirty = true
		return
	}
	s.syncing = g
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defs, err := s.listTools(g.ctx, g.cs)
		s.send(message{kind: mSyncDone, gen: g.n, defs: defs, err: err})
	}()
}

func (s *Supervisor) onSyncDone(m message) {
	g := s.syncing
	s.syncing = nil
	if s.m.State() == fsm.Draining {
		s.checkDrained()
		return
	}
	if g == nil || g.n != m.gen || g != s.cur || g.ending || s.m.State() != fsm.Established {
		s.drop()
		return
	}
	if m.err != nil {
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", m.err))
	} else if err := s.opts.Sink.Replace(s.opts.Name, g.n, m.defs); err != nil {
		// The sink left the previous registrations intact (R20).
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	} else {
		s.toolCount = len(m.defs)
	}
	if s.syncDirty {
		s.syncDirty = false
		s.requestSync(g)
	}
}
