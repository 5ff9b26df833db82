package mcpkeep

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// beats collects the progress a request's handler receives.
type beats struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (b *beats) fn(p *mcp.ProgressNotificationParams) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, p)
}

func (b *beats) list() []*mcp.ProgressNotificationParams {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), b.got...)
}

// openFails fails the Open of every generation from `from` on while
// *failing is set.
func openFails(from uint64, failing *bool, mu *sync.Mutex) func(uint64) transport.Fault {
	return func(gen uint64) transport.Fault {
		mu.Lock()
		defer mu.Unlock()
		if gen >= from && *failing {
			return transport.Fault{OpenErr: errors.New("refused")}
		}
		return transport.Fault{}
	}
}

// A request held during an outage gets a heartbeat every 5 s of the
// supervisor's clock, saying why; the server's call itself gets none.
func TestHeartbeatsWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		failing := true
		h := newHarness(t, nil)
		h.mem.Fault = openFails(2, &failing, &mu)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		var b beats
		done := make(chan error, 1)
		go func() {
			_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "hi"},
				&CallOptions{WaitForReady: true, Progress: b.fn})
			done <- err
		}()
		h.settle()
		for range 4 {
			h.advance(time.Second)
		}
		if n := len(b.list()); n != 0 {
			t.Fatalf("%d heartbeats before 5 s", n)
		}
		h.advance(time.Second)
		got := b.list()
		if len(got) != 1 || !strings.HasPrefix(got[0].Message, "waiting for srv: ") || !strings.Contains(got[0].Message, " of 4") {
			t.Fatalf("after 5 s: %+v", got)
		}
		for range 5 {
			h.advance(time.Second)
		}
		got = b.list()
		if len(got) != 2 || got[1].Progress <= got[0].Progress {
			t.Fatalf("after 10 s: %d heartbeats, want 2 increasing: %+v", len(got), got)
		}
		t.Logf("heartbeats: %q, %q", got[0].Message, got[1].Message)
		mu.Lock()
		failing = false
		mu.Unlock()
		for range 5 {
			h.advance(time.Second)
		}
		if err := <-done; err != nil {
			t.Fatalf("call after recovery: %v", err)
		}
		n := len(b.list())

		// The server runs this call: mcpkeep invents no progress for it.
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_, err := h.sup.Call(ctx, "hang", nil, &CallOptions{Progress: b.fn})
			done <- err
		}()
		h.settle()
		for range 30 {
			h.advance(time.Second)
		}
		cancel()
		h.settle()
		<-done
		if m := len(b.list()); m != n {
			t.Fatalf("%d heartbeats while the server ran the call", m-n)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// The wait for a replay beats too, and says it waits to repeat the call.
func TestHeartbeatsWhileWaitingForReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		failing := true
		r := &replayTools{}
		r.reset(1)
		h := newHarness(t, func(o *Options) { o.ReplayWait = time.Minute })
		h.mem.Serve = r.serve
		h.mem.Fault = openFails(2, &failing, &mu)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		var b beats
		c := goCall(h, "look", &CallOptions{Progress: b.fn})
		h.settle()
		h.mem.Gen(1).Kill()
		h.settle()
		for range 6 {
			h.advance(time.Second)
		}
		got := b.list()
		if len(got) != 1 || !strings.Contains(got[0].Message, "srv to come back to repeat the call") {
			t.Fatalf("heartbeats %+v", got)
		}
		mu.Lock()
		failing = false
		mu.Unlock()
		for range 5 {
			h.advance(time.Second)
		}
		res := <-c // blocks: the request's progress linger runs on the bubble's time
		if res.err != nil || !strings.HasPrefix(resultText(res.res), "look on gen ") {
			t.Fatalf("look = %v, %v", resultText(res.res), res.err)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// The heartbeat's ticker runs only while mcpkeep holds the request
// (docs/design.md §21): a request held, then served for longer than a
// beat, then lost and held again for its replay gets no beat at the loss
// (the next comes a full HeartbeatEvery into the hold). Before, the ticker
// went on while the server ran the call, and the tick it buffered fired
// at once when the replay's wait began.
func TestHeartbeatRestsWhileTheServerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &replayTools{}
		r.reset(2) // gen 2 runs the call until it ends
		h := newHarness(t, nil)
		h.mem.Serve = r.serve
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		var b beats
		c := goCall(h, "look", &CallOptions{WaitForReady: true, Progress: b.fn})
		h.settle()
		h.advance(time.Second) // gen 2: the call is sent and runs
		if r.got(2, "look") != 1 {
			t.Fatalf("gen 2 got %d calls, want 1", r.got(2, "look"))
		}
		h.advance(3 * HeartbeatEvery) // the server runs the call: no beats
		before := len(b.list())
		h.mem.Gen(2).Kill() // lost: held again for the replay
		h.settle()
		if got := b.list(); len(got) != before {
			t.Fatalf("a heartbeat at the loss (%q): the ticker ran while the server had the call", got[len(got)-1].Message)
		}
		h.advance(time.Second)          // gen 3: the replay
		if res := <-c; res.err != nil { // (its progress linger runs on the bubble's time)
			t.Fatalf("the replay: %v", res.err)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
