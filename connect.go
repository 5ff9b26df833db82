package mcpkeep

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// enterConnecting starts generation n+1 (the caller has fired the event
// that leads to connecting). The attempt waits for any older generation's
// barrier first: never two live transports (I1).
func (s *Supervisor) enterConnecting() *generation {
	g := s.newGeneration()
	g.retry = g.n > 1
	s.cur = g
	s.lostGen = nil
	s.nextRetry = time.Time{}
	n := g.n
	g.connectTimer = s.opts.Clock.AfterFunc(s.opts.ConnectTimeout, func() {
		s.send(message{kind: mConnectTimeout, gen: n})
	})
	if s.barrierPending(g) {
		g.deferred = true
		return g
	}
	s.startAttempt(g)
	return g
}

func (s *Supervisor) startAttempt(g *generation) {
	g.deferred = false
	g.started = true
	s.wg.Add(1)
	go s.attempt(g)
}

// barrierPending reports whether a generation other than except has not
// completed its close barrier.
func (s *Supervisor) barrierPending(except *generation) bool {
	for _, g := range s.gens {
		if g != except && !g.barrierDone {
			return true
		}
	}
	return false
}

func (s *Supervisor) onOpened(m message) {
	g := s.gens[m.gen]
	if g == nil {
		// Cannot happen: a generation stays in gens until its barrier,
		// which needs this attempt to finish. Fail closed anyway.
		m.tg.Terminate()
		return
	}
	g.tg = m.tg
	s.wg.Add(1)
	go s.watchGone(g)
	if g.ending {
		g.tg.Terminate()
	}
}

func (s *Supervisor) onAttempt(m message) {
	g := s.gens[m.gen]
	if g == nil {
		return
	}
	g.attemptDone = true
	if g.tg == nil {
		g.gone = true // Open failed or never happened: nothing was started
	}
	if m.cs != nil {
		g.cs = m.cs
	}
	current := g == s.cur && s.m.State() == fsm.Connecting && !g.ending && !g.failed
	switch {
	case m.err == nil && current:
		s.onConnected(g, m)
	case m.err != nil && current:
		s.onFailed(g, m.err)
	default:
		s.drop() // a second failure signal (after a timeout), or a result nobody waits for
	}
	if g.cs == nil {
		g.closeDone = true // a failed Connect closes its own session
	} else if g.ending && !g.closing {
		s.startCloser(g)
	}
	s.checkBarrier(g)
}

func (s *Supervisor) onConnected(g *generation, m message) {
	if err := s.opts.Sink.Replace(s.opts.Name, g.n, m.defs); err != nil {
		err = fmt.Errorf("initial tools sync: %w", err)
		if g.activation && s.opts.FailOnStartupError {
			s.onFailed(g, err)
			return
		}
		s.lastErr = err
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	} else {
		s.toolCount = len(m.defs)
	}
	t, ok := s.fire(fsm.Connected, fsm.Facts{})
	if !ok {
		return
	}
	stopTimer(&g.connectTimer)
	s.live.Store(g)
	s.wg.Add(1)
	go s.watchSession(g)
	if sa, ok := g.tg.(transport.SessionAware); ok {
		sa.Established(g.cs)
	}
	n := g.n
	g.stableTimer = s.opts.Clock.AfterFunc(s.opts.policy.StabilityWindow(), func() {
		s.send(message{kind: mStable, gen: n})
	})
	if g.retry {
		s.log(slog.LevelInfo, "recovered", g, slog.Int("attempt", s.budget.Attempt()))
	}
	s.emit(t, g, nil)
	s.activationDone(nil)
	if g.syncDirty {
		g.syncDirty = false
		s.requestSync(g)
	}
}

// onFailed: the current connecting generation's first failure signal.
func (s *Supervisor) onFailed(g *generation, err error) {
	t, ok := s.fire(fsm.Failed, fsm.Facts{Stale: g != s.cur, Repeated: g.failed})
	if !ok {
		return
	}
	g.failed = true
	s.enterLost(t, g, err)
	s.activationDone(err)
	if g.activation && s.opts.FailOnStartupError {
		s.onDispose()
		return
	}
	s.checkBarrier(g)
}

// onLost: the established generation's session ended.
func (s *Supervisor) onLost(g *generation, err error) {
	t, ok := s.fire(fsm.Closed, fsm.Facts{})
	if !ok {
		return
	}
	s.enterLost(t, g, err)
	s.checkBarrier(g)
}

// enterLost performs the effects of entering lost: record why, log the
// row's declared message (connection failed, connection lost; a manual
// reconnect logs none), and start g's teardown. Released follows at g's
// close barrier.
func (s *Supervisor) enterLost(t fsm.Transition, g *generation, err error) {
	s.lastErr = err
	if t.Log != "" {
		s.log(slog.LevelWarn, t.Log, g, s.lossAttrs(g, err)...)
	}
	s.endGen(g)
	s.lostGen = g
	s.emit(t, g, err)
}

func (s *Supervisor) lossAttrs(g *generation, err error) []slog.Attr {
	attrs := []slog.Attr{slog.Int("attempt", s.budget.Attempt()), slog.Any("err", err)}
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
