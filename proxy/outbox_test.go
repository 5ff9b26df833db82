package proxy

import (
	"context"
	"sync/atomic"
	"testing"

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
