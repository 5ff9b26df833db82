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

	"github.com/mcpkeep/mcpkeep/transport"
)

// cutGETs makes the server's standalone streams end whenever the test
// sends on the returned channel, as a proxy's idle timeout ends them.
func cutGETs(web *webServer) chan<- struct{} { return cutGETsAfter(web, nil) }

// cutGETsAfter is cutGETs with pre first: a GET it answers (pre returns
// true) does not reach the server.
func cutGETsAfter(web *webServer, pre func(http.ResponseWriter, *http.Request) bool) chan<- struct{} {
	cut := make(chan struct{})
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet {
			return false
		}
		if pre != nil && pre(w, r) {
			return true
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-cut:
				cancel()
			case <-ctx.Done():
			}
		}()
		web.mu.Lock()
		h := web.handler
		web.mu.Unlock()
		h.ServeHTTP(w, r.WithContext(ctx))
		return true
	})
	return cut
}

func isGET(r webRequest) bool { return r.Method == http.MethodGet }

// A legacy session's standalone stream cut by an intermediary is reopened
// under the SDK: the session and its generation outlive every cut.
func TestHTTPStandaloneStreamCutIsReopened(t *testing.T) {
	web := startWeb(t, false, true)
	cut := cutGETs(web)
	mock := clock.NewMock()
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, isGET)
	for i := 1; i <= 5; i++ {
		mock.Add(time.Minute) // the stream idled a minute, as before an ALB's cut
		cut <- struct{}{}
		web.waitUntil(t, func() bool { return web.count(isGET) > i })
		if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("after cut %d: %v", i, err)
		}
	}
	if isDoneChan(c.ended) {
		t.Fatalf("a cut ended the session: %q", c.g.Exit().Status)
	}
	// The server's notifications still arrive, on the reopened stream.
	web.mu.Lock()
	ms := web.ms
	web.mu.Unlock()
	addEcho(ms, "later")
	select {
	case <-c.changed:
	case <-time.After(httpTimeout):
		t.Fatal("no tools/list_changed on the reopened stream")
	}
}

// A server that ends its standalone stream as soon as it opened it is no
// intermediary's idle cut: after three in a row the generation ends.
func TestHTTPStandaloneStreamEndedAtOnceEndsTheGeneration(t *testing.T) {
	web := startWeb(t, false, true)
	// The streams end only once the handshake is done: ended sooner, the
	// generation could end before Connect sent notifications/initialized.
	connected := make(chan struct{})
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-connected:
		case <-r.Context().Done():
		}
		return true
	})
	mock := clock.NewMock() // never advanced: every stream lived 0 s
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour}, 1)
	close(connected)
	c.waitEnded(t, time.Now())
	if st := c.g.Exit().Status; !strings.Contains(st, "3 times in a row within 250ms of opening") {
		t.Errorf("Exit().Status = %q", st)
	}
	if n := web.count(isGET); n != 3 {
		t.Errorf("%d GETs; want 3", n)
	}
}

// A cut whose reopening finds the session gone (the server restarted and
// answers 404) ends the generation at once.
func TestHTTPStandaloneStreamReopenedIntoAForgottenSession(t *testing.T) {
	web := startWeb(t, false, true)
	cut := cutGETs(web)
	mock := clock.NewMock()
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, isGET)
	web.forget()
	cutGETs(web) // the hook again, over the new handler
	mock.Add(time.Minute)
	start := time.Now()
	cut <- struct{}{}
	d := c.waitEnded(t, start)
	t.Logf("forgotten session: loss seen %v after the cut", d)
	if st := c.g.Exit().Status; !strings.Contains(st, "reopening it: 404 Not Found (the session is gone)") {
		t.Errorf("Exit().Status = %q", st)
	}
}

// A probe answered 429 is a live server: no failure, and the next probe
// waits the Retry-After, bounded by MaxRetryAfter.
func TestHTTPProbeHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct{ header, next string }{{"120", "2m0s"}, {"86400", "5m0s"}} {
		web := startWeb(t, true, false)
		web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Mcp-Method") != "tools/list" {
				return false
			}
			w.Header().Set("Retry-After", tc.header)
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		})
		mock := clock.NewMock()
		var logs syncBuf
		h := &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Second,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		c := connectWeb(t, h, 1)
		want := `rate-limited; the server is alive" server="" gen=1 next=` + tc.next
		deadline := time.Now().Add(httpTimeout)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("Retry-After %s: no probe waited %s; log:\n%s", tc.header, tc.next, logs.String())
			}
			mock.Add(time.Second)
			time.Sleep(time.Millisecond)
		}
		if strings.Contains(logs.String(), "health probe failed") || isDoneChan(c.ended) {
			t.Errorf("a rate limit counted as a failure; log:\n%s", logs.String())
		}
		c.close(t)
	}
}

// A legacy session is probed with ping, which a sessionless legacy server
// answers: probes every 20 ms for 300 ms never end a live generation.
func TestHTTPLegacyProbePingsALiveServer(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProtocolVersion: "2025-11-25",
		ProbeInterval: 20 * time.Millisecond}, 1)
	before := web.count(func(webRequest) bool { return true })
	web.waitUntil(t, func() bool { return web.count(func(webRequest) bool { return true }) >= before+10 })
	if isDoneChan(c.ended) {
		t.Fatalf("a live server's generation ended: %q", c.g.Exit().Status)
	}
}

// A reopen answered 409 (the server has not yet seen the old stream's
// end: the SDK's and the TypeScript SDK's servers allow one standalone
// stream per session, and learn of a cut only when they next write) is
// asked again shortly, not taken for a lost session. Under load the
// fault suite's cut proxy met this race: "reopening it: 409 Conflict".
func TestHTTPStandaloneStreamReopenRetriesAConflict(t *testing.T) {
	web := startWeb(t, false, true)
	var conflicts atomic.Int32
	cut := cutGETsAfter(web, func(w http.ResponseWriter, r *http.Request) bool {
		if web.count(isGET) > 1 && conflicts.Add(1) <= 2 {
			http.Error(w, "Conflict: the session's stream is still open", http.StatusConflict)
			return true
		}
		return false
	})
	mock := clock.NewMock()
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, isGET)
	mock.Add(time.Minute)
	cut <- struct{}{}
	// Each 409 is followed by a wait on the generation's clock, armed at
	// a moment the test cannot see: mock time moves in small steps until
	// the next GET comes (two 409s, then the stream).
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(httpTimeout)
	for web.count(isGET) < 4 {
		select {
		case <-tick.C:
			mock.Add(5 * time.Millisecond)
		case <-deadline:
			t.Fatalf("%d GETs after the cut's two conflicts; want the reopened stream", web.count(isGET))
		}
	}
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if isDoneChan(c.ended) {
		t.Fatalf("a conflict on reopening ended the session: %q", c.g.Exit().Status)
	}
}
