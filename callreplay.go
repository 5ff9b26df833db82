package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Safe replay (docs/design.md §21): a call sent over a generation that
// ended before it answered may or may not have taken effect, so it is
// never repeated, unless the tool itself says repeating it is harmless
// (readOnlyHint or idempotentHint, as the lost generation listed it). Then
// it is sent once more on the next generation; a second loss is the
// caller's.

// mayReplay reports whether the call of tool that ended with err over g is
// to be sent once more.
func (s *Supervisor) mayReplay(ctx context.Context, g *generation, tool string, err error) bool {
	// A call whose first round was answered asked the host: never again.
	if s.opts.NoReplay || err == nil || ctx.Err() != nil || !errors.Is(err, ErrConnectionLost) || errors.Is(err, errAfterInput) {
		return false
	}
	v := g.view.Load()
	if v == nil || !v.safe[tool] {
		return false
	}
	traceOf(ctx).lost(s.opts.Name, err) // docs/design.md §27
	noticeReplay(ctx)                   // a task stays working (§25)
	return true
}

// holdForReplay starts the replay's wait: its own bound, at least the
// connect timeout, and first the end of g (the call may have failed on
// the connection's end before the loop ended g), heartbeats going on.
func (s *Supervisor) holdForReplay(ctx context.Context, g *generation, w *readyWait) error {
	if w.t != nil {
		w.t.Stop()
		w.t = nil
	}
	w.replay = &CallOptions{WaitForReady: true, ReadyTimeout: max(s.opts.ReplayWait, s.opts.ConnectTimeout)}
	w.traceWait(ctx, s.opts.Name)
	w.t = s.opts.Clock.Timer(w.replay.ReadyTimeout)
	for {
		select {
		case <-g.ctx.Done():
			// The caller's end may have come at once: select picks either,
			// and a replay is never sent for a caller that left (the task
			// model's -DSENDCANCELLED, docs/design.md §7: a task failed as
			// "not sent again" whose call went out anyway).
			return ctx.Err()
		case <-w.hb.tick(s.opts.Clock):
			w.hb.beat(s.waitReason(true))
		case <-w.t.C:
			return &NotConnectedError{Server: s.opts.Name, State: s.State().State, LastErr: errors.New("the lost connection did not end")}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// replayed counts and logs a replay that was sent over g.
func (s *Supervisor) replayed(g *generation, tool string, err error) {
	s.replays.Add(1)
	attrs := []slog.Attr{slog.String("server", s.opts.Name), slog.Uint64("gen", g.n), slog.String("tool", tool)}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "call replayed", attrs...)
}

// notReplayed is the error of a lost call whose replay could not be sent:
// the loss, which is what the caller must know (it may have taken
// effect), and why it was not repeated.
func notReplayed(lost, why error) error {
	return fmt.Errorf("%w (not repeated: %v)", lost, why)
}

// CallsReplayed counts the calls lost to a crash that were sent once more
// on the next generation (docs/design.md §21).
func (s *Supervisor) CallsReplayed() uint64 { return s.replays.Load() }
