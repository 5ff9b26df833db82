package faultsuite

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// pbWait bounds every wait of the probe and stream tests.
const pbWait = 5 * time.Second

// pbPolicy gives up after 4 retries, as the default HTTP policy's
// budget would after the "4 cuts": fast delays keep tests short.
var pbPolicy = backoff.Policy{Enabled: true, InitialDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 4}

// pbServer is a go-sdk MCP server on a loopback port: echo, and slow,
// which answers once the test releases it.
type pbServer struct {
	ms      *mcp.Server
	handler http.Handler
	srv     *http.Server
	served  chan struct{}
	url     string
	release chan struct{}
	started chan struct{} // a slow call arrived
}

// pbOptions shape a pbServer: stateless serves the 2026-07-28 era
// without sessions, ttl sets ttlMs on every list result (SEP-2549), and
// noListen offers no tools.listChanged (so a 2026-07-28 client opens no
// subscriptions/listen stream that would see the server die), and wrap
// puts a handler (a proxy, a rate limiter) in front.
type pbOptions struct {
	stateless bool
	ttl       time.Duration
	noListen  bool
	wrap      func(http.Handler) http.Handler
}

func startPBServer(t *testing.T, o pbOptions) *pbServer {
	t.Helper()
	s := &pbServer{release: make(chan struct{}), started: make(chan struct{}, 8), served: make(chan struct{})}
	so := &mcp.ServerOptions{}
	if o.ttl > 0 {
		so.SetCacheable = func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(o.ttl.Milliseconds())
		}
	}
	if o.noListen {
		so.Capabilities = &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}}
	}
	s.ms = mcp.NewServer(&mcp.Implementation{Name: "pb", Version: "1"}, so)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s.ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(s.ms, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		s.started <- struct{}{}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow:" + a.Text}}}, nil, nil
	})
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.ms },
		&mcp.StreamableHTTPOptions{Stateless: o.stateless})
	h := s.handler
	if o.wrap != nil {
		h = o.wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String() + "/mcp"
	s.srv = &http.Server{Handler: h}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(s.kill)
	return s
}

// kill stops serving and drops every session, as a dead process would.
func (s *pbServer) kill() {
	_ = s.srv.Close()
	<-s.served
	for ss := range s.ms.Sessions() {
		_ = ss.Close()
	}
}

// pbRig is one supervisor on the real clock, with its transitions.
type pbRig struct {
	t   *testing.T
	sup *mcpkeep.Supervisor

	mu    sync.Mutex
	trans []mcpkeep.Transition
}

func newPBRig(t *testing.T, h *transport.HTTP) *pbRig {
	t.Helper()
	r := &pbRig{t: t}
	sup, err := mcpkeep.New(mcpkeep.Options{
		Name:           "pb",
		Opener:         h,
		Policy:         pbPolicy,
		ConnectTimeout: pbWait,
		Logger:         slog.New(slog.DiscardHandler),
		Sink:           tools.NewSet(tools.Limits{}),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.sup = sup
	sup.Subscribe(func(tr mcpkeep.Transition) {
		r.mu.Lock()
		r.trans = append(r.trans, tr)
		r.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), pbWait)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pbWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	if err := sup.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return r
}

// left returns the transitions out of established so far.
func (r *pbRig) left() []mcpkeep.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []mcpkeep.Transition
	for _, tr := range r.trans {
		if tr.From == fsm.Established && tr.To != fsm.Established {
			out = append(out, tr)
		}
	}
	return out
}

// waitState waits until the snapshot satisfies ok.
func (r *pbRig) waitState(what string, ok func(mcpkeep.Snapshot) bool) mcpkeep.Snapshot {
	r.t.Helper()
	deadline := time.NewTimer(pbWait)
	defer deadline.Stop()
	for {
		changed := r.sup.Changed()
		if s := r.sup.State(); ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline.C:
			r.t.Fatalf("no snapshot with %s within %v (now %+v)", what, pbWait, r.sup.State())
		}
	}
}

func (r *pbRig) call(ctx context.Context, tool, text string) (string, error) {
	res, err := r.sup.Call(ctx, tool, map[string]any{"text": text}, nil)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("empty result")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", errors.New("not a text result")
	}
	return tc.Text, nil
}

func (r *pbRig) mustEcho(text string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pbWait)
	defer cancel()
	if got, err := r.call(ctx, "echo", text); err != nil || got != text {
		r.t.Fatalf("echo(%q) = %q, %v (state %+v)", text, got, err, r.sup.State())
	}
}
