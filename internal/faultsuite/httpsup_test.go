package faultsuite

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// Helpers of the HTTP fault tests (redirect, endless body, open streams):
// a real go-sdk MCP server behind a handler a test can put a fault in, and
// a Supervisor over transport.HTTP on the real clock.

// httpWait bounds every wait of the HTTP fault tests.
const httpWait = 10 * time.Second

// httpMCP is a go-sdk MCP server with one tool, echo, that answers with
// its argument "text".
func httpMCP(t *testing.T, stateless bool) (*mcp.Server, http.Handler) {
	t.Helper()
	ms := mcp.NewServer(&mcp.Implementation{Name: "fault", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	t.Cleanup(func() {
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	})
	return ms, h
}

// httpServe serves h on a loopback port until the test ends.
func httpServe(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// httpSupervisor starts a Supervisor of h (its Server name "fault") and
// waits until it is established; it is disposed when the test ends.
func httpSupervisor(t *testing.T, h *transport.HTTP) *mcpkeep.Supervisor {
	t.Helper()
	h.Server = "fault"
	if h.ProbeInterval == 0 {
		h.ProbeInterval = time.Minute // the probe is not what these tests look at
	}
	sup, err := mcpkeep.New(mcpkeep.Options{
		Name:           "fault",
		Opener:         h,
		Policy:         backoff.Policy{Enabled: true, InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 3},
		ConnectTimeout: 5 * time.Second,
		Sink:           tools.NewSet(tools.Limits{}),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), httpWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpWait)
	defer cancel()
	if err := sup.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return sup
}

// httpEcho calls echo through sup and returns its text.
func httpEcho(ctx context.Context, sup *mcpkeep.Supervisor, text string, opts *mcpkeep.CallOptions) (string, error) {
	res, err := sup.Call(ctx, "echo", map[string]any{"text": text}, opts)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", nil
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return "", nil
	}
	return tc.Text, nil
}
