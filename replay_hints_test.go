package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Replay is decided only from the hints the generation that lost the call
// listed (docs/design.md §21): a demand start serves from the registered
// catalog before its own lists came, and that catalog (here the cache's)
// may mark a tool read-only that the live server does not. Before, the
// call was replayed and the live server ran it twice.
func TestReplayOnlyFromTheLiveServersHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &replayTools{}
		r.reset(1) // gen 1's tools hang: the call is in flight when it ends
		h := newHarness(t, func(o *Options) {
			o.Lazy = true
			e := &catalogcache.Entry{Listed: true}
			for _, n := range []string{"look", "put", "write"} {
				// A stale cache: write was read-only when it was listed.
				e.Tools = append(e.Tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"},
					Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
			}
			o.Cache = &memStore{e: e}
		})
		h.mem.Serve = r.serve
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		c := goCall(h, "write", nil) // starts gen 1 on demand
		h.settle()
		if r.got(1, "write") != 1 {
			t.Fatalf("gen 1 got %d calls of write, want 1", r.got(1, "write"))
		}
		h.mem.Gen(1).Kill()
		h.settle()
		res := resultOf(t, c)
		if !errors.Is(res.err, ErrConnectionLost) {
			t.Fatalf("write = %v, want ErrConnectionLost: the live server never marked it safe", res.err)
		}
		h.advance(1e9) // the retry
		if n := r.got(2, "write"); n != 0 || h.sup.CallsReplayed() != 0 {
			t.Fatalf("write replayed on gen 2 (%d calls, %d replays) from the cache's hint", n, h.sup.CallsReplayed())
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// An answer that arrived is the answer (docs/design.md §21): a server's
// JSON-RPC error read as its generation ends is neither a lost connection
// nor a call to replay. Before, any error once the generation had ended
// became ErrConnectionLost, and a read-only tool's answered call was sent
// again.
func TestSettleAnAnswerThatArrivedIsTheAnswer(t *testing.T) {
	g := newGeneration(1)
	g.peerErrs = true
	g.cancel() // the generation ends as the answer is read
	answer := fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: -32603, Message: "the tool failed"})
	sent, err := g.settle(context.Background(), "srv", answer)
	if !sent || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("settle(server's error answer) = sent %v, %v; want sent, the answer itself", sent, err)
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Message != "the tool failed" {
		t.Fatalf("the answer was not kept: %v", err)
	}
	// The connection's own end is still a loss.
	if _, err := g.settle(context.Background(), "srv", context.Canceled); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("settle(cancelled by the generation's end) = %v, want ErrConnectionLost", err)
	}
}

// A request's wake-up to a server that is already starting is not a
// stale event (docs/design.md §20): requests that arrive together each
// send one, and none is counted in Stats.Dropped, which counts what the
// guards and the table refuse (I7). Before, every wake-up after the first
// was counted.
func TestDemandWakeUpsAreNotDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, lazyCached)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		var calls []<-chan callResult
		for range 4 {
			calls = append(calls, goCall(h, "echo", nil))
		}
		h.settle()
		for _, c := range calls {
			if r := resultOf(t, c); r.err != nil {
				t.Fatal(r.err)
			}
		}
		if st := h.sup.Stats(); st.Dropped != 0 {
			t.Fatalf("Stats.Dropped = %d after four requests woke an idle server, want 0 (%v)", st.Dropped, st.Rejected)
		}
		wantCauses(t, h, StartDemand)
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
