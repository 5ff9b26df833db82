package mcpkeep

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

func (s *Supervisor) onDispose() {
	t, ok := s.fire(fsm.Dispose, fsm.Facts{})
	if !ok {
		return // already draining or disposed
	}
	stopTimer(&s.retryTimer)
	s.nextRetry = time.Time{}
	if s.cur != nil {
		s.endGen(s.cur)
	}
	s.drainTimer = s.opts.Clock.AfterFunc(s.opts.TerminationWindow, func() {
		s.send(message{kind: mDrainTimeout})
	})
	s.emit(t, s.cur, nil)
	s.activationDone(ErrDisposed)
	if s.cur != nil {
		s.checkBarrier(s.cur) // a deferred attempt has nothing to wait for
	}
	s.checkDrained()
}

// checkDrained finishes the drain once the attempt, the sync and every
// barrier have settled.
func (s *Supervisor) checkDrained() {
	if s.m.State() != fsm.Draining || s.syncing != nil {
		return
	}
	for _, g := range s.gens {
		if !g.barrierDone {
			return
		}
	}
	t, ok := s.fire(fsm.Drained, fsm.Facts{})
	if !ok {
		return
	}
	s.finish(t, nil)
}

func (s *Supervisor) onDrainTimeout() {
	if s.m.State() != fsm.Draining {
		s.drop()
		return
	}
	t, ok := s.fire(fsm.DrainTimeout, fsm.Facts{})
	if !ok {
		return
	}
	var pending []uint64
	for n, g := range s.gens {
		if !g.barrierDone {
			pending = append(pending, n)
		}
	}
	err := fmt.Errorf("%w: generations %v still closing after %s", ErrIncompleteShutdown, pending, s.opts.TerminationWindow)
	s.log(slog.LevelError, "incomplete shutdown", s.cur, slog.Any("err", err))
	s.finish(t, err)
}

func (s *Supervisor) finish(t fsm.Transition, err error) {
	stopTimer(&s.drainTimer)
	stopTimer(&s.retryTimer)
	for _, g := range s.gens {
		stopTimer(&g.termTimer)
		stopTimer(&g.stableTimer)
		stopTimer(&g.connectTimer)
	}
	s.opts.Sink.Release(s.opts.Name)
	s.toolCount = 0
	s.finished = true
	s.mu.Lock()
	s.disposeErr = err
	s.mu.Unlock()
	s.emit(t, s.cur, err)
}

// unregister removes the server's tools (exhausted by budget, stuck).
func (s *Supervisor) unregister() {
	s.opts.Sink.Remove(s.opts.Name)
	s.toolCount = 0
}
