package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hostile-host half of docs/design.md §19, in process: a host that
// stops reading, hosts that come and go.

// stalledHost opens a legacy HTTP session at base, sets its log level to
// debug, opens its event stream and never reads it.
func stalledHost(t *testing.T, base string, h http.Handler) *stalledWriter {
	t.Helper()
	post := func(sid string, body map[string]any) (string, string) {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(mustJSON(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %v: %d %s", body["method"], resp.StatusCode, b)
		}
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	sid, _ := post("", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "stalled", "version": "0"}}})
	if sid == "" {
		t.Fatal("no session id")
	}
	post(sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	post(sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": map[string]any{"level": "debug"}})
	// The event stream, served in process to a writer that takes the
	// headers and then blocks every write until the test ends: a host
	// that stopped reading, without depending on socket buffer sizes.
	w := &stalledWriter{header: http.Header{}, release: make(chan struct{})}
	req, err := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "127.0.0.1"
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); h.ServeHTTP(w, req.WithContext(ctx)) }()
	t.Cleanup(func() {
		cancel()
		close(w.release)
		<-served
	})
	return w
}

// stalledWriter is a response writer whose writes block until release.
type stalledWriter struct {
	header  http.Header
	release chan struct{}
	writes  atomic.Int64 // writes started
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}
func (w *stalledWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	<-w.release
	return 0, errors.New("the host went away")
}

// TestStalledHostDelaysNobody (docs/design.md §19): a host session that
// holds its event stream open without reading receives 2 MiB of a
// server's log messages; the server's call that sent them, the healthy
// host beside it and the other server are served on time, and the stalled
// session's outbox drops what it cannot take.
func TestStalledHostDelaysNobody(t *testing.T) {
	r := newRig(t, Options{}, "a", "b")
	hs := r.serveHTTP()
	var logs atomic.Int64
	healthy := r.httpHost(hs.URL, "2025-11-25", &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
	})
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := healthy.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var stalled *stalledWriter
	if os.Getenv("NOSTALL") == "" {
		stalled = stalledHost(t, hs.URL, r.h)
	}
	start := time.Now()
	if got, isErr := call(t, healthy, "a__flood", map[string]any{"n": 512}); isErr || got != "flooded" {
		t.Fatalf("flood: %q %v", got, isErr)
	}
	if got, isErr := call(t, healthy, "b__echo", map[string]any{"text": "on time"}); isErr || got != "on time" {
		t.Errorf("b__echo after the flood: %q %v", got, isErr)
	}
	t.Logf("2 MiB of logs with a stalled host: %v, the healthy host got %d messages, %d dropped",
		time.Since(start), logs.Load(), r.srv.HostDropped())
	if n := logs.Load(); n < 256 {
		t.Errorf("the healthy host got %d of the 512 log messages: the stalled host held them", n)
	}
	if stalled != nil && stalled.writes.Load() == 0 {
		t.Error("nothing was written to the stalled host: the test stalls nobody")
	}
	if r.srv.HostDropped() == 0 {
		t.Error("the stalled session's outbox dropped nothing: did it take 2 MiB?")
	}
}

// TestSessionsForgotten (docs/design.md §19): a dozen host sessions that set a
// level and subscribed, then ended, leave nothing behind, and the servers'
// level falls back to what the remaining session asked for.
func TestSessionsForgotten(t *testing.T) {
	r := newRig(t, Options{}, "sf")
	hs := r.serveHTTP()
	keep := r.httpHost(hs.URL, "2025-11-25", nil)
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := keep.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if err := keep.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://sf/doc"}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "brief", Version: "0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://sf/doc"}); err != nil {
			t.Fatalf("subscribe %d: %v", i, err)
		}
		c0 := time.Now()
		_ = cs.Close()
		if i < 3 {
			t.Logf("close %d took %v", i, time.Since(c0))
		}
	}
	t.Logf("sessions done")
	waitFor(t, "the ended sessions forgotten", func() bool {
		r.srv.mu.Lock()
		defer r.srv.mu.Unlock()
		return len(r.srv.mu.sessions) == 1 && len(r.srv.mu.levels) == 1 && len(r.srv.mu.subs) == 1 &&
			len(r.srv.mu.subscribed["mem://sf/doc"]) == 1
	})
	if lv := lastLevel("sf"); lv != "warning" {
		t.Errorf("servers' level after the verbose sessions left: %q, want warning", lv)
	}
}

var _ = json.Marshal

// TestFailedFirstSubscribeKeepsTheSecond (docs/design.md §19): while the
// first session's subscribe is with the server, a second session's waits
// for it; when the first fails, the second's is made, not lost.
func TestFailedFirstSubscribeKeepsTheSecond(t *testing.T) {
	gate := make(chan struct{})
	var n atomic.Int32
	hook := func(string) error {
		if n.Add(1) == 1 {
			<-gate
			return errors.New("not now")
		}
		return nil
	}
	subscribeHook.Store(&hook)
	defer subscribeHook.Store(nil)
	r := newRig(t, Options{}, "sub")
	hs := r.serveHTTP()
	a := r.httpHost(hs.URL, "2025-11-25", nil)
	b := r.httpHost(hs.URL, "2025-11-25", nil)
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://sub/doc"}) }()
	waitFor(t, "the first subscribe at the server", func() bool { return n.Load() == 1 })
	second := make(chan error, 1)
	go func() { second <- b.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://sub/doc"}) }()
	// The second subscribe has reached the proxy: it waits on the URI's
	// entry, or (as before the fix) it already returned.
	waitFor(t, "the second subscribe at the proxy", func() bool {
		if len(second) > 0 {
			return true
		}
		r.srv.mu.Lock()
		defer r.srv.mu.Unlock()
		st := r.srv.mu.subs["mem://sub/doc"]
		return st != nil && st.refs == 2
	})
	close(gate)
	if err := <-first; err == nil {
		t.Error("the first subscribe succeeded though its server refused it")
	}
	if err := <-second; err != nil {
		t.Fatalf("the second subscribe: %v", err)
	}
	r.srv.mu.Lock()
	subs := len(r.srv.mu.subscribed["mem://sub/doc"])
	r.srv.mu.Unlock()
	if subs != 1 {
		t.Errorf("after a failed first subscribe the second session's subscription is gone: %d subscribed", subs)
	}
}

// TestRootsRefreshOneAtATime (docs/design.md §19): a legacy host's
// roots/list_changed storm costs one roots/list at a time, and a change
// during one is fetched once more afterwards (before: a goroutine and a
// fetch per notification, answers applied in any order).
func TestRootsRefreshOneAtATime(t *testing.T) {
	r := newRig(t, Options{}, "rt")
	var inFlight, most, total atomic.Int32
	gate := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if total.Add(1) == 2 {
				<-gate // the second fetch (the first change's) is held
			}
			return next(ctx, method, req)
		}
	})
	client.AddRoots(&mcp.Root{URI: "file:///r0"})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ctx, st) }()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); cancel(); <-served }()
	r.waitApplied()
	waitFor(t, "the roots at initialized", func() bool { return total.Load() >= 1 && inFlight.Load() == 0 })
	client.AddRoots(&mcp.Root{URI: "file:///r1"})
	waitFor(t, "the held fetch", func() bool { return total.Load() == 2 })
	for i := range 20 { // a storm while a fetch is held
		client.AddRoots(&mcp.Root{URI: fmt.Sprintf("file:///s%d", i)})
	}
	close(gate)
	waitFor(t, "the storm's one more fetch", func() bool { return total.Load() >= 3 && inFlight.Load() == 0 })
	// 22 notifications: a fetch each before; now one at a time, and a few
	// in all (the storm's notifications reach the proxy while a fetch runs,
	// or just after it).
	if most.Load() != 1 || total.Load() > 8 {
		t.Errorf("roots/list: %d at most at once, %d in all for 22 changes; want 1 at once, a few in all", most.Load(), total.Load())
	}
}
