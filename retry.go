package mcpkeep

import (
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// onReleased: the lost generation is closed; retry, give up, or wait for
// a manual reconnect.
func (s *Supervisor) onReleased(g *generation) {
	facts := fsm.Facts{ReconnectDisabled: !s.opts.policy.Enabled, BudgetSpent: !s.budget.Left()}
	t, ok := s.fire(fsm.Released, facts)
	if !ok {
		return
	}
	switch {
	case t.To == fsm.BackingOff:
		attempt, _ := s.budget.Next()
		delay := s.opts.policy.JitteredDelay(attempt, s.opts.Rand.Float64())
		s.retrySeq++
		seq := s.retrySeq
		s.retryTimer = s.opts.Clock.AfterFunc(delay, func() {
			s.send(message{kind: mRetryDue, seq: seq})
		})
		s.nextRetry = s.opts.Clock.Now().Add(delay)
		s.log(slog.LevelWarn, "reconnecting", g,
			slog.Int("attempt", attempt), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
			slog.Duration("delay", delay))
	case t.Guard.Name == fsm.BudgetSpent.Name:
		s.unregister()
		s.log(slog.LevelError, "gave up", g,
			slog.Int("attempt", s.budget.Attempt()), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
			slog.Any("err", s.lastErr))
	default:
		s.log(slog.LevelError, "reconnect disabled", g, slog.Any("err", s.lastErr))
	}
	s.emit(t, g, s.lastErr)
}

func (s *Supervisor) onRetryDue() {
	t, ok := s.fire(fsm.RetryDue, fsm.Facts{})
	if !ok {
		return
	}
	s.retryTimer = nil
	g := s.enterConnecting()
	s.emit(t, g, nil)
}

func (s *Supervisor) onReconnect() error {
	from := s.m.State()
	t, err := s.m.Fire(fsm.Reconnect, fsm.Facts{})
	if err != nil {
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", s.opts.Name, err)
	}
	switch from {
	case fsm.Established:
		// An operator's restart is not a failure: the budget starts over.
		g := s.cur
		s.budget.Reset()
		s.enterLost(t, g, errManualReconnect)
		s.checkBarrier(g)
	case fsm.BackingOff:
		stopTimer(&s.retryTimer)
		s.emit(t, s.enterConnecting(), nil)
	case fsm.Exhausted:
		s.budget.Reset()
		s.emit(t, s.enterConnecting(), nil)
	}
	return nil
}
