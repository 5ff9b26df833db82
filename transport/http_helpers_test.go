package transport_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// httpTimeout bounds every wait of the HTTP tests.
const httpTimeout = 5 * time.Second

// webServer is a real loopback MCP server that a test can kill and
// restart on the same port, with a hook to fake faults per request.
type webServer struct {
	t           *testing.T
	stateless   bool
	listChanged bool
	addr        string

	mu       sync.Mutex
	srv      *http.Server
	served   chan struct{} // closed when Serve returned
	ms       *mcp.Server
	handler  http.Handler
	hook     func(http.ResponseWriter, *http.Request) bool // true: handled
	requests []webRequest
	arrived  chan struct{} // signalled (non-blocking) on every request
	quit     chan struct{} // closed at the test's end: hung handlers return
	answered chan string   // the Mcp-Method of each request answered (non-blocking)
}

// webRequest is what the server saw of one request.
type webRequest struct {
	Method, MCPMethod, SessionID string
	Header                       http.Header
}

func startWeb(t *testing.T, stateless, listChanged bool) *webServer {
	t.Helper()
	w := &webServer{t: t, stateless: stateless, listChanged: listChanged, addr: "127.0.0.1:0",
		arrived: make(chan struct{}, 1), quit: make(chan struct{}),
		answered: make(chan string, 64)}
	w.start()
	t.Cleanup(func() {
		close(w.quit)
		w.kill()
	})
	return w
}

func (w *webServer) URL() string { return "http://" + w.addr + "/mcp" }

// start serves a fresh MCP server (no memory of earlier sessions) on the
// same address as before.
func (w *webServer) start() {
	w.t.Helper()
	ln, err := net.Listen("tcp", w.addr)
	if err != nil {
		w.t.Fatalf("listen %s: %v", w.addr, err)
	}
	ms := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: w.listChanged}}})
	addEcho(ms, "echo")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: w.stateless})
	srv := &http.Server{Handler: w}
	served := make(chan struct{})
	w.mu.Lock()
	w.addr, w.srv, w.served, w.ms, w.handler = ln.Addr().String(), srv, served, ms, h
	w.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
}

// kill stops serving and drops every session, as a dead process would.
func (w *webServer) kill() {
	w.mu.Lock()
	srv, served, ms := w.srv, w.served, w.ms
	w.srv = nil
	w.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-served
	for ss := range ms.Sessions() {
		_ = ss.Close()
	}
}

func (w *webServer) restart() {
	w.kill()
	w.start()
}

// forget swaps in a fresh MCP handler on the same listener: the server
// no longer knows the sessions it issued, though their streams stay open.
func (w *webServer) forget() *mcp.Server {
	ms := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "2"}, nil)
	addEcho(ms, "echo")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: w.stateless})
	w.mu.Lock()
	old := w.ms
	w.ms, w.handler = ms, h
	w.mu.Unlock()
	w.t.Cleanup(func() {
		for _, s := range []*mcp.Server{old, ms} {
			for ss := range s.Sessions() {
				_ = ss.Close()
			}
		}
	})
	return ms
}

// hang plays a hung server: it takes the request and never answers (until
// the client gives up or the test ends). The body is read first, or the
// server would not notice the client leaving.
func (w *webServer) hang(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-w.quit:
	}
}

func (w *webServer) setHook(h func(http.ResponseWriter, *http.Request) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hook = h
}

func (w *webServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.requests = append(w.requests, webRequest{Method: r.Method, MCPMethod: r.Header.Get("Mcp-Method"),
		SessionID: r.Header.Get("Mcp-Session-Id"), Header: r.Header.Clone()})
	hook, h := w.hook, w.handler
	w.mu.Unlock()
	select {
	case w.arrived <- struct{}{}:
	default:
	}
	if hook != nil && hook(rw, r) {
		return
	}
	h.ServeHTTP(rw, r)
	select {
	case w.answered <- r.Header.Get("Mcp-Method"):
	default:
	}
}

// waitAnswered waits until the server has answered a request to method.
func (w *webServer) waitAnswered(t *testing.T, method string) {
	t.Helper()
	deadline := time.NewTimer(httpTimeout)
	defer deadline.Stop()
	for {
		select {
		case m := <-w.answered:
			if m == method {
				return
			}
		case <-deadline.C:
			t.Fatalf("no %s answered within %s", method, httpTimeout)
		}
	}
}

// waitRequest waits until the server saw a request that ok accepts.
func (w *webServer) waitRequest(t *testing.T, ok func(webRequest) bool) {
	t.Helper()
	w.waitUntil(t, func() bool { return w.count(ok) > 0 })
}

// waitUntil waits, request by request, until cond holds.
func (w *webServer) waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(httpTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-w.arrived:
		case <-deadline.C:
			t.Fatalf("the server did not see what the test waits for within %s", httpTimeout)
		}
	}
}

func (w *webServer) count(ok func(webRequest) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.requests {
		if ok(r) {
			n++
		}
	}
	return n
}

func addEcho(s *mcp.Server, name string) {
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
}

// webConn is one generation connected the way the supervisor does it.
type webConn struct {
	g       transport.Generation
	cs      *mcp.ClientSession
	ended   chan struct{} // closed when cs.Wait returned
	changed chan struct{} // tools/list_changed arrived
}

func connectWeb(t *testing.T, h *transport.HTTP, gen uint64) *webConn {
	t.Helper()
	g, err := h.Open(context.Background(), gen)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	c := &webConn{g: g, ended: make(chan struct{}), changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpkeep-test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, g.Transport(), h.SessionOptions())
	if err != nil {
		g.Terminate()
		<-g.Gone()
		t.Fatalf("Connect: %v", err)
	}
	c.cs = cs
	go func() {
		_ = cs.Wait()
		close(c.ended)
	}()
	if sa, ok := g.(transport.SessionAware); ok {
		sa.Established(cs)
	}
	t.Cleanup(func() { c.close(t) })
	return c
}

// close tears the generation down the supervisor's way and checks the
// barrier completes in time.
func (c *webConn) close(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = c.cs.Close()
		close(done)
	}()
	c.g.Terminate()
	for _, ch := range []<-chan struct{}{done, c.g.Gone(), c.ended} {
		select {
		case <-ch:
		case <-time.After(httpTimeout + 2*time.Second):
			t.Fatalf("teardown did not complete")
		}
	}
}

// waitEnded waits for the session to end by itself and reports how long
// that took from since.
func (c *webConn) waitEnded(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-c.ended:
		return time.Since(since)
	case <-time.After(httpTimeout):
		t.Fatalf("session did not end within %s", httpTimeout)
		return 0
	}
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func isCall(method string) func(webRequest) bool {
	return func(r webRequest) bool { return r.MCPMethod == method }
}

func isDoneChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
