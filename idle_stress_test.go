package mcpkeep

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// TestIdleStopStressLosesNoCall (docs/design.md §20) runs the idle stop's
// admission on the real clock: a 1 ms idle stop, three callers calling
// with short pauses, for a bounded time (1.5 s). Every call is answered: none is let
// through and then cut by the stop. Before the stop closed the generation
// to new calls, such a run lost about one call in 350 (45 of 15,596 over
// 535 idle stops).
func TestIdleStopStressLosesNoCall(t *testing.T) {
	mem := transport.NewMemory("echo")
	sup, err := New(Options{
		Name: "srv", Opener: mem, Sink: tools.NewSet(tools.Limits{}),
		Policy:         testPolicy,
		ConnectTimeout: 5 * time.Second, TerminationWindow: 3 * time.Second,
		IdleStop: time.Millisecond,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	var stops atomic.Int64
	sup.Subscribe(func(tr Transition) {
		if tr.Event == fsm.IdleTimeout {
			stops.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const callers = 3
	end := time.Now().Add(1500 * time.Millisecond)
	var calls, lost atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				// Callers that pause now and then (not a wait for
				// anything: the shape of the load), so the server is
				// quiet for a window often and a call often arrives just
				// as it is stopped.
				time.Sleep(time.Duration(1+(n+i)%3) * time.Millisecond)
				calls.Add(1)
				res, err := sup.Call(ctx, "echo", map[string]any{"text": "x"}, nil)
				if err != nil || res.IsError {
					lost.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err := sup.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls, %d lost, %d idle stops", calls.Load(), lost.Load(), stops.Load())
	if lost.Load() != 0 {
		t.Fatalf("%d of %d calls lost over %d idle stops; first: %v", lost.Load(), calls.Load(), stops.Load(), firstErr.Load())
	}
	if stops.Load() == 0 {
		t.Fatal("no idle stop happened: the run proved nothing")
	}
}
