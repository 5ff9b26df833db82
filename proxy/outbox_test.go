package proxy

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOutboxDropsLogsBeforeProgress: a full outbox drops its oldest log
// message, and a progress message only when no log message is queued, so
// one server's log flood does not cost another call its progress.
func TestOutboxDropsLogsBeforeProgress(t *testing.T) {
	var os outboxes
	ss := new(mcp.ServerSession) // a key only: nothing is sent to it
	release := make(chan struct{})
	os.push(ss, false, func(context.Context) { <-release }) // the writer holds this one
	var progress, logs atomic.Int32
	for i := range 3 * outboxCap {
		if i%50 == 0 {
			os.push(ss, true, func(context.Context) { progress.Add(1) })
			continue
		}
		os.push(ss, false, func(context.Context) { logs.Add(1) })
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	os.flush(ctx, ss)
	os.close(ctx)
	want := int32((3*outboxCap + 49) / 50)
	if progress.Load() != want {
		t.Errorf("%d of %d progress messages sent", progress.Load(), want)
	}
	if os.dropped.Load() == 0 || logs.Load() == 0 {
		t.Errorf("dropped %d, logs sent %d", os.dropped.Load(), logs.Load())
	}
}

// TestOutboxFlushIgnoresAFloodAfterIt: a result waits for what its
// session had queued before it (its own progress), not for another
// server's flood that keeps the queue busy after it: the answer goes out
// at once, not at the flush's bound (docs/design.md §19).
func TestOutboxFlushIgnoresAFloodAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var os outboxes
		ss := new(mcp.ServerSession) // a key only: nothing is sent to it
		var progress atomic.Bool
		os.push(ss, true, func(context.Context) { progress.Store(true) }) // the call's own
		// The flood: each message takes 1 ms to write (synctest's clock)
		// and queues the next, until stopped.
		var stop atomic.Bool
		var flood func(context.Context)
		flood = func(context.Context) {
			time.Sleep(time.Millisecond)
			if !stop.Load() {
				os.push(ss, false, flood)
			}
		}
		os.push(ss, false, flood)
		defer func() {
			stop.Store(true)
			os.close(context.Background())
		}()
		ctx, cancel := context.WithTimeout(context.Background(), flushBound)
		defer cancel()
		start := time.Now()
		os.flush(ctx, ss)
		// It waits for the one flood message queued before it: 1 ms.
		if waited := time.Since(start); waited > time.Millisecond || ctx.Err() != nil {
			t.Fatalf("the flush waited %v for the flood (the bound is %v)", waited, flushBound)
		}
		if !progress.Load() {
			t.Fatal("the flush returned before the call's own progress was sent")
		}
	})
}

// TestFlushWithNothingQueuedCostsNothing: a result whose session has
// nothing queued goes out without a timer or a context of its own: every
// relayed call flushes (docs/design.md §24, the hop).
func TestFlushWithNothingQueuedCostsNothing(t *testing.T) {
	var h hostLink
	ss := new(mcp.ServerSession) // a key only: nothing is sent to it
	h.outboxes.push(ss, true, func(context.Context) {})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	h.flush(ctx, ss) // the queued message is sent
	call, stop := context.WithCancel(context.Background())
	defer stop()
	if n := testing.AllocsPerRun(100, func() { h.flush(call, ss) }); n != 0 {
		t.Errorf("flush with nothing queued: %.0f allocations, want 0", n)
	}
	h.outboxes.close(ctx)
}
