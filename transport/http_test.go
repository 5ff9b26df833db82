package transport_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

var (
	_ transport.Opener          = (*transport.HTTP)(nil)
	_ transport.SessionOptioner = (*transport.HTTP)(nil)
)

func TestHTTPOpenRejectsBadConfig(t *testing.T) {
	t.Setenv("MCPKEEP_TEST_SECRET", "s3cret\nInjected: 1")
	for _, tc := range []struct {
		name    string
		h       transport.HTTP
		want    string
		secrets []string
	}{
		{"scheme", transport.HTTP{URL: "ftp://host/mcp"}, "scheme must be http or https", nil},
		{"no host", transport.HTTP{URL: "http:///mcp"}, "no host", nil},
		{"parse", transport.HTTP{URL: "http://user:pw@[::1/mcp"}, "bad URL", []string{"pw"}},
		{"userinfo redacted", transport.HTTP{URL: "gopher://user:pw@host/"}, "gopher://***@host/", []string{":pw@", "user"}},
		{"query redacted", transport.HTTP{URL: "gopher://host/?api_key=SECRET&x=1"}, "gopher://host/?api_key=***&x=***", []string{"SECRET"}},
		{"escape in the password", transport.HTTP{URL: "http://user:p%zzw@host/?k=SECRET"}, "bad URL http://host/***: invalid %-escape", []string{"SECRET", "%zz"}},
		{"header value", transport.HTTP{URL: "http://127.0.0.1:1/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${MCPKEEP_TEST_SECRET}"}},
			`header "Authorization": value has a control character`, []string{"s3cret"}},
		{"version", transport.HTTP{URL: "http://127.0.0.1:1/mcp", ProtocolVersion: "1999-01-01"},
			`protocol version "1999-01-01" is not one of`, nil},
		{"header name", transport.HTTP{URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Bad Name": "x"}},
			`header "Bad Name": invalid name`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.h.Open(context.Background(), 1)
			if err == nil {
				g.Terminate()
				t.Fatalf("Open succeeded; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to contain %q", err, tc.want)
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q leaks %q", err, s)
				}
			}
		})
	}
}

func TestHTTPSessionOptionsAndWindow(t *testing.T) {
	h := &transport.HTTP{URL: "http://127.0.0.1:1/mcp"}
	if h.SessionOptions() != nil {
		t.Errorf("SessionOptions without a pin = %+v; want nil", h.SessionOptions())
	}
	h.ProtocolVersion = "2025-11-25"
	if so := h.SessionOptions(); so == nil || so.ProtocolVersion != "2025-11-25" {
		t.Errorf("SessionOptions = %+v", so)
	}
	if w := h.TerminationWindow(); w < 5*time.Second || w > 10*time.Second {
		t.Errorf("TerminationWindow = %v; want the SDK's 5 s DELETE bound plus a little", w)
	}
}

func TestHTTPTerminateBeforeConnect(t *testing.T) {
	h := &transport.HTTP{URL: "http://127.0.0.1:1/mcp"}
	g, err := h.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	g.Terminate()
	g.Terminate()
	select {
	case <-g.Gone():
	case <-time.After(httpTimeout):
		t.Fatal("Gone did not close")
	}
	if _, err := g.Transport().Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Connect after Terminate = %v; want terminated", err)
	}
}

// Legacy era: headers injected (expanded, never logged), one session, the
// DELETE on close, and the barrier.
func TestHTTPStatefulHeadersAndOrderlyClose(t *testing.T) {
	web := startWeb(t, false, true)
	t.Setenv("MCPKEEP_TEST_TOKEN", "tok-123")
	logs := &syncBuf{}
	h := &transport.HTTP{URL: web.URL(), Server: "web",
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Headers: map[string]string{"Authorization": "Bearer ${MCPKEEP_TEST_TOKEN}", "X-Extra": "1"}}
	c := connectWeb(t, h, 1)
	if v := c.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || c.cs.ID() == "" {
		t.Fatalf("protocol %q session %q; want a 2025-11-25 session", v, c.cs.ID())
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	web.waitRequest(t, func(r webRequest) bool { return r.Method == http.MethodGet })
	if n := web.count(func(r webRequest) bool {
		return r.Header.Get("Authorization") != "Bearer tok-123" || r.Header.Get("X-Extra") != "1"
	}); n != 0 {
		t.Errorf("%d requests without the configured headers", n)
	}
	id := c.cs.ID()
	c.close(t)
	web.waitRequest(t, func(r webRequest) bool { return r.Method == http.MethodDelete && r.SessionID == id })
	if st := c.g.Exit().Status; st != "" {
		t.Errorf("Exit().Status after an orderly close = %q; want empty", st)
	}
	if strings.Contains(logs.String(), "tok-123") {
		t.Error("a header value reached the log")
	}
}

// Legacy era: a killed server ends the session at once (the SDK's
// standalone stream breaks and MaxRetries -1 lets it fail), no probe.
func TestHTTPStatefulKillIsSeenAtOnce(t *testing.T) {
	web := startWeb(t, false, true)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, func(r webRequest) bool { return r.Method == http.MethodGet })
	start := time.Now()
	web.kill()
	d := c.waitEnded(t, start)
	t.Logf("stateful: loss seen %v after the kill", d)
	if d > 2*time.Second {
		t.Errorf("loss seen after %v; want within 2 s", d)
	}
	if st := c.g.Exit().Status; !strings.Contains(st, "GET "+web.URL()+": event stream ended") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// Legacy era: a server that forgets the session answers 404 on the next
// request; the SDK reports ErrSessionMissing and the session ends.
func TestHTTPStatefulForgottenSessionEnds(t *testing.T) {
	web := startWeb(t, false, true)
	c := connectWeb(t, &transport.HTTP{URL: web.URL()}, 1)
	web.forget()
	_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
	if err == nil {
		t.Fatal("call on a forgotten session succeeded")
	}
	c.waitEnded(t, time.Now())
	if st := c.g.Exit().Status; !strings.Contains(st, "POST "+web.URL()+": 404") {
		t.Errorf("Exit().Status = %q; want the 404", st)
	}
}

// Legacy era without a standalone stream (GET answered 405): nothing in
// the SDK watches the session, so the probe does.
func TestHTTPStatefulWithoutStreamIsProbed(t *testing.T) {
	web := startWeb(t, false, true)
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return true
		}
		return false
	})
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: 50 * time.Millisecond}, 1)
	start := time.Now()
	web.kill()
	d := c.waitEnded(t, start)
	t.Logf("stateful without stream: loss seen %v after the kill", d)
	if st := c.g.Exit().Status; !strings.Contains(st, "health probe: 2 consecutive failures") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// 2026-07-28, no subscription (the server offers no list_changed): only
// the probe can see the server die; it takes at most two intervals.
func TestHTTPStatelessKillIsSeenByTheProbe(t *testing.T) {
	web := startWeb(t, true, false)
	const interval = 100 * time.Millisecond
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: interval}, 1)
	if v := c.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || c.cs.ID() != "" {
		t.Fatalf("protocol %q session %q; want sessionless 2026-07-28", v, c.cs.ID())
	}
	// The worst case: the server dies just after answering a probe.
	web.waitAnswered(t, "tools/list")
	start := time.Now()
	web.kill()
	d := c.waitEnded(t, start)
	t.Logf("stateless (probe, interval %v): loss seen %v after the kill", interval, d)
	if d > 2*interval+300*time.Millisecond {
		t.Errorf("loss seen after %v; want within 2 intervals (%v)", d, 2*interval)
	}
	if st := c.g.Exit().Status; !strings.Contains(st, "health probe: 2 consecutive failures") || !strings.Contains(st, web.URL()) {
		t.Errorf("Exit().Status = %q", st)
	}
}

// 2026-07-28 with a subscription: a restart between two probes is seen
// at once, because the subscriptions/listen stream breaks.
func TestHTTPStatelessRestartEndsTheSubscription(t *testing.T) {
	web := startWeb(t, true, true)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, isCall("subscriptions/listen"))
	start := time.Now()
	web.restart()
	d := c.waitEnded(t, start)
	t.Logf("stateless (subscription stream): loss seen %v after the restart", d)
	if st := c.g.Exit().Status; !strings.Contains(st, "subscriptions/listen POST "+web.URL()+": event stream ended") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// A failed probe followed by a success renews a generation that has no
// subscription stream to prove the server did not restart.
func TestHTTPProbeFailureThenSuccessRenews(t *testing.T) {
	web := startWeb(t, true, false)
	failNextList(web)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: 20 * time.Millisecond, ProbeFailures: 3}, 1)
	c.waitEnded(t, time.Now())
	if st := c.g.Exit().Status; !strings.Contains(st, "answered again after 1 failed probe") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// With the subscription stream open throughout, a failed probe is a blip,
// not a restart: the generation stays.
func TestHTTPProbeBlipWithSubscriptionIsAbsorbed(t *testing.T) {
	web := startWeb(t, true, true)
	failNextList(web)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: 20 * time.Millisecond, ProbeFailures: 3}, 1)
	// The failed probe, then three good ones.
	web.waitUntil(t, func() bool { return web.count(isCall("tools/list")) >= 4 })
	if isDoneChan(c.ended) {
		t.Fatalf("a blip ended the generation: %q", c.g.Exit().Status)
	}
	// The subscription still delivers.
	web.mu.Lock()
	ms := web.ms
	web.mu.Unlock()
	addEcho(ms, "later")
	select {
	case <-c.changed:
	case <-time.After(httpTimeout):
		t.Fatal("no tools/list_changed after the blip")
	}
}

// A hung server fails the probe by its timeout.
func TestHTTPProbeTimesOutOnAHungServer(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: 20 * time.Millisecond,
		ProbeTimeout: 50 * time.Millisecond}, 1)
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Mcp-Method") != "tools/list" {
			return false
		}
		web.hang(r)
		return true
	})
	c.waitEnded(t, time.Now())
	if st := c.g.Exit().Status; !strings.Contains(st, "no answer within 50ms") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// A generation that ended itself does not wait for the DELETE: its
// server is dead or hung, so Gone follows at once.
func TestHTTPEndedGenerationSkipsTheDelete(t *testing.T) {
	web := startWeb(t, false, true)
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return true
		}
		return false
	})
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: 20 * time.Millisecond,
		ProbeTimeout: 50 * time.Millisecond}, 1)
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		web.hang(r)
		return true
	})
	start := time.Now()
	c.waitEnded(t, start)
	select {
	case <-c.g.Gone():
	case <-time.After(time.Second):
		t.Fatal("Gone did not follow the generation's own end")
	}
	t.Logf("hung stateful server without stream: ended and gone %v after the hang began", time.Since(start))
	if n := web.count(func(r webRequest) bool { return r.Method == http.MethodDelete }); n != 0 {
		t.Errorf("%d DELETE sent to a hung server", n)
	}
}

// The probe's timers follow the Clock: with a mock clock and an hour-long
// interval, a dead server is seen as soon as the test moves the clock.
func TestHTTPProbeFollowsTheClock(t *testing.T) {
	web := startWeb(t, true, false)
	mock := clock.NewMock()
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour, ProbeTimeout: time.Hour}, 1)
	web.kill()
	deadline := time.After(httpTimeout)
	for !isDoneChan(c.ended) {
		select {
		case <-deadline:
			t.Fatal("the dead server was not seen while advancing the mock clock")
		case <-time.After(10 * time.Millisecond):
			mock.Add(time.Hour)
		}
	}
	if st := c.g.Exit().Status; !strings.Contains(st, "health probe: 2 consecutive failures") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// An orderly close of a subscribed stateless generation is not mistaken
// for the server dropping the subscription.
func TestHTTPStatelessOrderlyClose(t *testing.T) {
	web := startWeb(t, true, true)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, isCall("subscriptions/listen"))
	c.close(t)
	if st := c.g.Exit().Status; st != "" {
		t.Errorf("Exit().Status after an orderly close = %q; want empty", st)
	}
}

// A host's client is used (its RoundTripper under mcpkeep's), and is not
// closed with the generation.
func TestHTTPHostClient(t *testing.T) {
	web := startWeb(t, true, false)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	rt := &countingRT{base: base}
	h := &transport.HTTP{URL: web.URL(), HTTPClient: &http.Client{Transport: rt},
		Headers: map[string]string{"X-Tenant": "t1"}}
	c := connectWeb(t, h, 1)
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	c.close(t)
	if rt.n.Load() == 0 {
		t.Error("the host's RoundTripper carried no request")
	}
	if n := web.count(func(r webRequest) bool { return r.Header.Get("X-Tenant") != "t1" }); n != 0 {
		t.Errorf("%d requests without the configured header", n)
	}
}

type countingRT struct {
	base http.RoundTripper
	n    atomic.Int32
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// A pinned legacy version on a stateless server: a sessionless legacy
// session, which nothing in the SDK watches, so it is probed.
func TestHTTPPinnedLegacySessionlessIsProbed(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProtocolVersion: "2025-11-25",
		ProbeInterval: 50 * time.Millisecond}, 1)
	if v := c.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || c.cs.ID() != "" {
		t.Fatalf("protocol %q session %q; want sessionless 2025-11-25", v, c.cs.ID())
	}
	web.kill()
	c.waitEnded(t, time.Now())
	if st := c.g.Exit().Status; !strings.Contains(st, "health probe: 2 consecutive failures") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// failNextList makes the server answer the next tools/list (a probe) with
// 503, once.
func failNextList(web *webServer) {
	failNext := make(chan struct{}, 1)
	failNext <- struct{}{}
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Mcp-Method") != "tools/list" {
			return false
		}
		select {
		case <-failNext:
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		default:
			return false
		}
	})
}
