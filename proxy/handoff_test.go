package proxy

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHandoffsOfAClosedHostAreDropped (issue 33 item 15): a fast call
// still in flight when its host closes ends (cancelled) after the
// connection dropped its hand-offs; its outcome, handed back to an SDK
// server that will never read it, must not stay in the table for the
// proxy's life.
func TestHandoffsOfAClosedHostAreDropped(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := newRig(t, Options{}, "a")
			st, ct := mcp.NewInMemoryTransports()
			ctx, hostGone := context.WithCancel(context.Background())
			defer hostGone()
			served := make(chan error, 1)
			go func() { served <- r.srv.Serve(ctx, st) }()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).
				Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			r.waitApplied()
			done := make(chan struct{})
			go func() {
				defer close(done)
				cctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				defer cancel()
				_, _ = cs.CallTool(cctx, &mcp.CallToolParams{Name: "a__hang", Arguments: map[string]any{"text": "x"}})
			}()
			waitFor(t, "the hang call in flight", func() bool { return r.srv.calls.count() == 1 })
			handed := r.srv.fast.handedBack.Load()
			hostGone() // the host's connection closes mid-call
			<-served
			<-done
			waitFor(t, "the call ended", func() bool { return r.srv.calls.count() == 0 })
			r.srv.up.handoffs.mu.Lock()
			n := len(r.srv.up.handoffs.m)
			r.srv.up.handoffs.mu.Unlock()
			if n != 0 {
				t.Errorf("%d hand-offs left after the host closed (%d handed back)", n, r.srv.fast.handedBack.Load()-handed)
			}
		})
	}
}
