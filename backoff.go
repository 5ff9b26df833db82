package mcpkeep

import (
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// The rows out of backing-off and exhausted: retry_due, and the manual
// reconnect (also from established).

// armRetry arms the retry timer of the next attempt of this outage; its
// sequence number is the timer's identity for the TimerCurrent guard.
func (lc *lifecycle) armRetry(g *generation) {
	attempt, _ := lc.budget.Next()
	delay := lc.opts.policy.JitteredDelay(attempt, lc.opts.Rand.Float64())
	lc.retrySeq++
	seq := lc.retrySeq
	// The due time is read before the timer is armed, so the timer can
	// never fire before the time the trace and the snapshot announce.
	lc.nextRetry = lc.opts.Clock.Now().Add(delay)
	lc.retryTimer = lc.opts.Clock.AfterFunc(delay, func() {
		lc.s.send(message{kind: mRetryDue, seq: seq})
	})
	lc.log(slog.LevelWarn, "reconnecting", g,
		slog.Int("attempt", attempt), slog.Int("max_attempts", lc.opts.policy.MaxAttempts),
		slog.Duration("delay", delay))
}

func (lc *lifecycle) onRetryDue(m message) {
	t, ok := lc.fire(fsm.RetryDue, m)
	if !ok {
		return
	}
	lc.retryTimer = nil
	g := lc.enterConnecting()
	g.cause = StartRecovery
	lc.emit(t, g, nil)
}

// onReconnect is the host's manual restart. From established it is an
// operator's restart, not a failure: the budget starts over.
func (lc *lifecycle) onReconnect(m message) error {
	from := lc.m.State()
	t, err := lc.m.Fire(fsm.Reconnect, lc.facts(m))
	if err != nil {
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", lc.opts.Name, err)
	}
	lc.leaveIdleStop(t.To)
	switch from {
	case fsm.Established:
		g := lc.cur
		lc.budget.Reset()
		lc.enterLost(t, g, errManualReconnect)
		lc.checkBarrier(g)
	case fsm.BackingOff:
		stopTimer(&lc.retryTimer)
		g := lc.enterConnecting()
		g.cause = StartRecovery
		lc.emit(t, g, nil)
	case fsm.Exhausted:
		lc.budget.Reset()
		g := lc.enterConnecting()
		g.cause = StartRecovery
		lc.emit(t, g, nil)
	case fsm.Idle:
		g := lc.enterConnecting()
		g.retry = false
		g.cause = StartRecovery
		lc.emit(t, g, nil)
	}
	return nil
}
