package mcpkeep

import (
	"fmt"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// loop is the single owner of the FSM. It starts the activation attempt
// and then handles one message at a time until disposed.
func (s *Supervisor) loop() {
	defer close(s.done)
	defer close(s.stop)
	s.enterConnecting().activation = true
	s.publish()
	for !s.finished {
		s.handle(<-s.inbox)
		s.publish()
	}
}

func (s *Supervisor) handle(m message) {
	switch m.kind {
	case mOpened:
		s.onOpened(m)
	case mAttempt:
		s.onAttempt(m)
	case mConnectTimeout:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || s.m.State() != fsm.Connecting || g.failed {
			s.drop()
			return
		}
		s.onFailed(g, fmt.Errorf("%w after %s", ErrConnectTimeout, s.opts.ConnectTimeout))
	case mSessionEnded:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || g.ending || s.m.State() != fsm.Established {
			s.drop()
			return
		}
		s.onLost(g, m.err)
	case mCloseReturned:
		if g := s.gens[m.gen]; g != nil {
			g.closeDone = true
			s.checkBarrier(g)
		}
	case mGone:
		if g := s.gens[m.gen]; g != nil {
			g.gone = true
			s.checkBarrier(g)
		}
	case mTermWindow:
		s.onTermWindow(m.gen)
	case mRetryDue:
		if s.m.State() != fsm.BackingOff || m.seq != s.retrySeq {
			s.drop()
			return
		}
		s.onRetryDue()
	case mStable:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || g.ending {
			s.drop()
			return
		}
		t, ok := s.fire(fsm.Stable, fsm.Facts{})
		if !ok {
			return
		}
		s.budget.Reset()
		s.emit(t, g, nil)
	case mToolsChanged:
		s.onToolsChanged(m.gen)
	case mSyncDone:
		s.onSyncDone(m)
	case mReconnect:
		m.reply <- s.onReconnect()
	case mDispose:
		s.onDispose()
	case mDrainTimeout:
		s.onDrainTimeout()
	case mInspect:
		m.probe()
	}
}

// fire applies ev. A guard that rejects (a stale generation, a repeated
// failure) or an event not declared here is dropped and counted.
func (s *Supervisor) fire(ev fsm.Event, facts fsm.Facts) (fsm.Transition, bool) {
	t, err := s.m.Fire(ev, facts)
	if err != nil {
		s.drop()
		return t, false
	}
	return t, true
}

func (s *Supervisor) drop() { s.dropped.Add(1) }
