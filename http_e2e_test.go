package mcpkeep

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of a Supervisor over transport.HTTP against real
// loopback servers (go-sdk's StreamableHTTPHandler), in both protocol
// eras: stateful (2025-11-25, Mcp-Session-Id) and stateless (2026-07-28).
// Servers are killed and restarted on the same port; every wait is
// bounded, and goleak (main_test.go) checks that nothing outlives a test.

// webWait bounds every wait of these tests.
const webWait = 10 * time.Second

// webProbe is the stateless health probe's interval in these tests.
const webProbe = 100 * time.Millisecond

// webPolicy: delays 50, 100, 200, 200, 200 ms, then give up.
var webPolicy = backoff.Policy{Enabled: true, InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 5}

// webEra is one protocol era of a test server.
type webEra struct {
	name      string
	stateless bool
}

var webEras = []webEra{{"stateful", false}, {"stateless", true}}

// webFeed is an append-only list a test can wait on.
type webFeed[T any] struct {
	mu    sync.Mutex
	items []T
	tick  chan struct{}
}

func newWebFeed[T any]() *webFeed[T] { return &webFeed[T]{tick: make(chan struct{}, 1)} }

func (f *webFeed[T]) add(v T) {
	f.mu.Lock()
	f.items = append(f.items, v)
	f.mu.Unlock()
	select {
	case f.tick <- struct{}{}:
	default:
	}
}

// wait returns the first item matching pred, waiting up to webWait.
func (f *webFeed[T]) wait(t *testing.T, what string, pred func(T) bool) T {
	t.Helper()
	return f.waitN(t, what, 1, pred)
}

// waitN returns the n-th item matching pred, waiting up to webWait.
func (f *webFeed[T]) waitN(t *testing.T, what string, n int, pred func(T) bool) T {
	t.Helper()
	deadline := time.NewTimer(webWait)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		seen := 0
		for _, v := range f.items {
			if pred(v) {
				if seen++; seen == n {
					f.mu.Unlock()
					return v
				}
			}
		}
		f.mu.Unlock()
		select {
		case <-f.tick:
		case <-deadline.C:
			t.Fatalf("no %s within %v", what, webWait)
		}
	}
}

// webServer is a real MCP server on a loopback port that survives its
// restarts. Each start is a fresh mcp.Server: it knows no earlier session.
type webServer struct {
	t           *testing.T
	stateless   bool
	listChanged bool
	addr        string

	mu       sync.Mutex
	srv      *http.Server
	served   chan struct{}
	ms       *mcp.Server
	handler  http.Handler
	servers  []*mcp.Server    // every one ever served: their sessions are closed at the end
	requests *webFeed[string] // the Mcp-Method (2026-07-28) or HTTP method of each request
}

func newWebServer(t *testing.T, stateless, listChanged bool) *webServer {
	t.Helper()
	w := &webServer{t: t, stateless: stateless, listChanged: listChanged, addr: "127.0.0.1:0",
		requests: newWebFeed[string]()}
	w.start()
	t.Cleanup(func() {
		w.kill()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, s := range w.servers {
			for ss := range s.Sessions() {
				_ = ss.Close()
			}
		}
	})
	return w
}

func (w *webServer) URL() string { return "http://" + w.addr + "/mcp" }

func (w *webServer) newMCP() (*mcp.Server, http.Handler) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: w.listChanged}}})
	webAddEcho(ms, "echo")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: w.stateless})
	w.servers = append(w.servers, ms)
	return ms, h
}

func (w *webServer) start() {
	w.t.Helper()
	ln, err := net.Listen("tcp", w.addr)
	if err != nil {
		w.t.Fatalf("listen %s: %v", w.addr, err)
	}
	srv := &http.Server{Handler: w}
	served := make(chan struct{})
	w.mu.Lock()
	w.ms, w.handler = w.newMCP()
	w.addr, w.srv, w.served = ln.Addr().String(), srv, served
	w.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
}

// kill stops serving and drops every session: a dead process.
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

// forget swaps in a fresh MCP server behind the same listener: the
// sessions it issued are unknown from now on, though nothing broke.
func (w *webServer) forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ms, w.handler = w.newMCP()
}

func (w *webServer) current() *mcp.Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ms
}

func (w *webServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	h := w.handler
	w.mu.Unlock()
	m := r.Header.Get("Mcp-Method")
	if m == "" {
		m = r.Method
	}
	w.requests.add(m)
	h.ServeHTTP(rw, r)
}

func webAddEcho(s *mcp.Server, name string) {
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + a.Text}}}, nil, nil
	})
}

// webLog is one record of the supervisor's log.
type webLog struct {
	Msg   string
	Attrs map[string]string
}

type webLogHandler struct {
	feed *webFeed[webLog]
	with []slog.Attr
}

func (h *webLogHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *webLogHandler) Handle(_ context.Context, r slog.Record) error {
	l := webLog{Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.with {
		l.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { l.Attrs[a.Key] = a.Value.String(); return true })
	h.feed.add(l)
	return nil
}
func (h *webLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &webLogHandler{feed: h.feed, with: append(append([]slog.Attr(nil), h.with...), as...)}
}
func (h *webLogHandler) WithGroup(string) slog.Handler { return h }

// webRig is one supervisor of a webServer, on the real clock.
type webRig struct {
	t     *testing.T
	web   *webServer
	set   *tools.Set
	sup   *Supervisor
	trans *webFeed[Transition]
	logs  *webFeed[webLog]
}

func newWebRig(t *testing.T, web *webServer) *webRig {
	t.Helper()
	r := &webRig{t: t, web: web, set: tools.NewSet(tools.Limits{}),
		trans: newWebFeed[Transition](), logs: newWebFeed[webLog]()}
	sup, err := New(Options{
		Name:           "web",
		Opener:         &transport.HTTP{URL: web.URL(), Server: "web", ProbeInterval: webProbe},
		Policy:         webPolicy,
		ConnectTimeout: 5 * time.Second,
		Logger:         slog.New(&webLogHandler{feed: r.logs}),
		Sink:           r.set,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.sup = sup
	sup.Subscribe(r.trans.add)
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), webWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	if err := sup.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	r.established(1)
	return r
}

// transition waits for gen's transition from → to.
func (r *webRig) transition(gen uint64, from, to fsm.State) Transition {
	r.t.Helper()
	return r.trans.wait(r.t, "gen "+strconv.FormatUint(gen, 10)+" "+from.String()+" → "+to.String(),
		func(tr Transition) bool { return tr.Gen == gen && tr.From == from && tr.To == to })
}

func (r *webRig) established(gen uint64) Transition {
	r.t.Helper()
	return r.transition(gen, fsm.Connecting, fsm.Established)
}

// firstEstablishedAfter waits for the first generation after gen to be
// established and returns its number.
func (r *webRig) firstEstablishedAfter(gen uint64) uint64 {
	r.t.Helper()
	return r.trans.wait(r.t, "a generation after "+strconv.FormatUint(gen, 10)+" established", func(tr Transition) bool {
		return tr.Gen > gen && tr.From == fsm.Connecting && tr.To == fsm.Established
	}).Gen
}

// snapshot waits until the published snapshot satisfies ok.
func (r *webRig) snapshot(what string, ok func(Snapshot) bool) Snapshot {
	r.t.Helper()
	deadline := time.NewTimer(webWait)
	defer deadline.Stop()
	for {
		changed := r.sup.Changed()
		if s := r.sup.State(); ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline.C:
			r.t.Fatalf("no snapshot with %s within %v (now %+v)", what, webWait, r.sup.State())
		}
	}
}

func (r *webRig) call(tool, text string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
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

func (r *webRig) mustCall(tool, text string) {
	r.t.Helper()
	if got, err := r.call(tool, text); err != nil || got != tool+":"+text {
		r.t.Fatalf("%s(%q) = %q, %v", tool, text, got, err)
	}
}

func (r *webRig) registered() int {
	_, defs, _ := r.set.Server("web")
	return len(defs)
}

// (a) A killed server is seen at once (stateful: its event stream breaks;
// stateless: its subscriptions/listen stream breaks), the supervisor backs
// off while it is down, and recovers when it is back on the same port:
// tools callable, and a tools/list_changed of the new server delivered.
func TestHTTPKillAndRestartRecovers(t *testing.T) {
	for _, era := range webEras {
		t.Run(era.name, func(t *testing.T) {
			web := newWebServer(t, era.stateless, true)
			r := newWebRig(t, web)
			r.mustCall("echo", "before")

			killed := time.Now()
			web.kill()
			lost := r.transition(1, fsm.Established, fsm.Lost)
			t.Logf("%s: loss seen %v after the kill (%v)", era.name, lost.At.Sub(killed), lost.Err)
			if d := lost.At.Sub(killed); d > 2*time.Second {
				t.Errorf("loss seen after %v; want within 2 s", d)
			}
			// One retry fails against the dead port, then the server is back.
			r.transition(2, fsm.Connecting, fsm.Lost)
			web.start()
			gen := r.firstEstablishedAfter(2)
			t.Logf("%s: recovered as gen %d, %v after the kill", era.name, gen, time.Since(killed))
			r.mustCall("echo", "after")
			if n := r.registered(); n != 1 {
				t.Fatalf("registered %d tools after recovery; want 1", n)
			}

			// The new server's tool change reaches the new generation.
			if era.stateless {
				// (the subscription is opened by Connect; wait until the
				// server has it before changing the tools.)
				web.requests.waitN(t, "the new generation's subscriptions/listen", 2, webIs("subscriptions/listen"))
			}
			webAddEcho(web.current(), "extra")
			r.trans.wait(t, "tools_changed of gen "+strconv.FormatUint(gen, 10), func(tr Transition) bool {
				return tr.Gen == gen && tr.Event == fsm.ToolsChanged && tr.From == fsm.Established
			})
			r.snapshot("2 tools", func(s Snapshot) bool { return s.Tools == 2 })
			r.mustCall("extra", "new")
			r.logs.wait(t, "recovered log", func(l webLog) bool {
				return l.Msg == "recovered" && l.Attrs["gen"] == strconv.FormatUint(gen, 10)
			})
		})
	}
}

// (b) A server down for good exhausts the budget: the supervisor gives up
// and unregisters the tools. The stateless server here has no
// list_changed, so only the health probe can see it die.
func TestHTTPServerGoneForGoodExhausts(t *testing.T) {
	for _, era := range webEras {
		t.Run(era.name, func(t *testing.T) {
			web := newWebServer(t, era.stateless, !era.stateless)
			r := newWebRig(t, web)
			if n := r.registered(); n != 1 {
				t.Fatalf("registered %d tools; want 1", n)
			}
			if era.stateless {
				// The initial tools/list, then a health probe.
				web.requests.waitN(t, "a health probe", 2, webIs("tools/list"))
			}
			killed := time.Now()
			web.kill()
			lost := r.transition(1, fsm.Established, fsm.Lost)
			t.Logf("%s: loss seen %v after the kill (%v)", era.name, lost.At.Sub(killed), lost.Err)
			limit := 2 * time.Second
			if era.stateless {
				limit = 2*webProbe + 300*time.Millisecond
			}
			if d := lost.At.Sub(killed); d > limit {
				t.Errorf("loss seen after %v; want within %v", d, limit)
			}
			s := r.snapshot("exhausted", func(s Snapshot) bool { return s.State == fsm.Exhausted })
			t.Logf("%s: exhausted %v after the kill, %d attempts (%v)", era.name, time.Since(killed), s.Attempt, s.LastErr)
			if s.Attempt != webPolicy.MaxAttempts {
				t.Errorf("attempts = %d; want %d", s.Attempt, webPolicy.MaxAttempts)
			}
			if _, defs, ok := r.set.Server("web"); ok && len(defs) > 0 {
				t.Errorf("tools still registered after giving up: %d", len(defs))
			}
			r.logs.wait(t, "gave up log", func(l webLog) bool { return l.Msg == "gave up" })
			var nc *NotConnectedError
			if _, err := r.call("echo", "x"); !errors.As(err, &nc) || nc.State != fsm.Exhausted {
				t.Errorf("call after giving up: %v; want NotConnectedError in exhausted", err)
			}
		})
	}
}

// (c) A server that forgets us. Stateful: its new incarnation behind the
// same listener answers 404 for the old session; the next request ends
// the generation and the next one initializes a new session. Stateless:
// a restart between two probes (here the probe never runs) kills the
// subscriptions/listen stream silently as far as the SDK goes; the
// transport sees it end and renews the generation, so list_changed keeps
// arriving.
func TestHTTPServerForgetsUs(t *testing.T) {
	t.Run("stateful", func(t *testing.T) {
		web := newWebServer(t, false, true)
		r := newWebRig(t, web)
		old := webSessionIDs(web.current())
		web.forget()
		if _, err := r.call("echo", "x"); err == nil {
			t.Fatal("call on the forgotten session succeeded")
		}
		lost := r.transition(1, fsm.Established, fsm.Lost)
		if !errors.Is(lost.Err, mcp.ErrSessionMissing) {
			t.Logf("gen 1 lost with %v", lost.Err)
		}
		r.established(2)
		r.mustCall("echo", "again")
		now := webSessionIDs(web.current())
		if len(now) != 1 || len(old) != 1 || now[0] == old[0] {
			t.Errorf("sessions before %v, after %v; want one new session", old, now)
		}
		r.logs.wait(t, "connection lost log naming the 404", func(l webLog) bool {
			return l.Msg == "connection lost" && l.Attrs["exit"] == "POST "+web.URL()+": 404 Not Found"
		})
	})
	t.Run("stateless", func(t *testing.T) {
		web := newWebServer(t, true, true)
		r := newWebRig(t, web)
		restarted := time.Now()
		web.kill()
		web.start()
		lost := r.transition(1, fsm.Established, fsm.Lost)
		t.Logf("stateless restart: loss seen %v after it (%v)", lost.At.Sub(restarted), lost.Err)
		gen := r.firstEstablishedAfter(1)
		web.requests.waitN(t, "the new generation's subscriptions/listen", 2, webIs("subscriptions/listen"))
		webAddEcho(web.current(), "extra")
		r.trans.wait(t, "tools_changed after the restart", func(tr Transition) bool {
			return tr.Gen == gen && tr.Event == fsm.ToolsChanged
		})
		r.snapshot("2 tools", func(s Snapshot) bool { return s.Tools == 2 })
		r.logs.wait(t, "connection lost log naming the subscription", func(l webLog) bool {
			return l.Msg == "connection lost" && l.Attrs["gen"] == "1" && strings.Contains(l.Attrs["exit"], "subscriptions/listen")
		})
	})
}

func webIs(method string) func(string) bool {
	return func(m string) bool { return m == method }
}

func webSessionIDs(s *mcp.Server) []string {
	var ids []string
	for ss := range s.Sessions() {
		ids = append(ids, ss.ID())
	}
	return ids
}
