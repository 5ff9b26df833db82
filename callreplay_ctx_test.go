package mcpkeep

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// A replay is never sent for a caller that left: when the lost
// generation's end and the caller's end are both there, holdForReplay
// says the caller left, whichever its select picks (run many times: a
// select of two ready cases picks at random).
func TestHoldForReplayAfterTheCallerLeft(t *testing.T) {
	s := &Supervisor{}
	s.opts.Name, s.opts.Clock, s.opts.ConnectTimeout = "s", clock.NewMock(), time.Minute
	gctx, gcancel := context.WithCancel(context.Background())
	gcancel()
	g := &generation{n: 1, ctx: gctx}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 {
		w := &readyWait{}
		err := s.holdForReplay(ctx, g, w)
		w.stop()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: holdForReplay = %v, want the caller's context.Canceled", i, err)
		}
	}
}
