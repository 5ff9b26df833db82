package faultsuite

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// A server answers each POST over an event stream and then keeps the
// stream open (a proxy that buffers, a server that never closes its
// streams). Once a request returned, mcpkeep closes its stream: after
// N calls by callers whose contexts never end (and the initial sync), no
// answered stream stays open and the goroutines return to their baseline,
// while the subscriptions/listen stream stays open for the generation's
// life and no answered request is cancelled on the server.
func TestFaultOpenStreamsClosedAfterAnswer(t *testing.T) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "fault", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: true})
	t.Cleanup(func() {
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	})
	quit := make(chan struct{})
	var held, listens, cancels atomic.Int64
	srv := httpServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Mcp-Method") {
		case "subscriptions/listen":
			listens.Add(1)
			defer listens.Add(-1)
			h.ServeHTTP(w, r)
			return
		case "notifications/cancelled":
			cancels.Add(1)
		}
		h.ServeHTTP(w, r)
		if w.Header().Get("Content-Type") != "text/event-stream" {
			return
		}
		held.Add(1)
		defer held.Add(-1)
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}))
	t.Cleanup(func() { close(quit) })

	sup := httpSupervisor(t, &transport.HTTP{URL: srv.URL + "/mcp"})
	waitFor(t, "the subscriptions/listen stream open", func() bool { return listens.Load() == 1 })
	// The handshake's and the initial sync's streams are closed.
	waitFor(t, "every answered stream closed after Start", func() bool { return held.Load() == 0 })
	base := runtime.NumGoroutine()

	const n = 20
	for i := range n {
		text := fmt.Sprint("call ", i)
		if got, err := httpEcho(context.Background(), sup, text, nil); err != nil || got != text {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	t.Logf("right after %d calls: %d answered streams open, goroutines %+d", n, held.Load(), runtime.NumGoroutine()-base)
	waitFor(t, "every answered stream closed after the calls", func() bool { return held.Load() == 0 })
	waitFor(t, "the goroutines back to their baseline", func() bool { return runtime.NumGoroutine() <= base+5 })
	if l := listens.Load(); l != 1 {
		t.Errorf("%d subscriptions/listen streams open; want 1 (it lives as long as the generation)", l)
	}
	if c := cancels.Load(); c != 0 {
		t.Errorf("the server got %d notifications/cancelled; answered requests are not cancelled", c)
	}
}

// waitFor polls cond (every 10 ms) until it holds, at most httpWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(httpWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so within %v", what, httpWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
