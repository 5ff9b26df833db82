package transport_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"golang.org/x/oauth2"

	"github.com/mcpkeep/mcpkeep/transport"
)

// rotatingAuth is a server's bearer check and the client's handler at
// once: the server accepts only accepted; the handler hands out current,
// and its Authorize (a 401) takes the server's token, as a refresh would.
type rotatingAuth struct {
	mu                sync.Mutex
	accepted, current string
	authorized        int
}

func (a *rotatingAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return a, nil }

func (a *rotatingAuth) Token() (*oauth2.Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &oauth2.Token{AccessToken: a.current, TokenType: "Bearer"}, nil
}

func (a *rotatingAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.authorized++
	a.current = a.accepted
	return nil
}

// set makes the server accept accepted and the handler hand out current.
func (a *rotatingAuth) set(accepted, current string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.accepted, a.current = accepted, current
}

func (a *rotatingAuth) ok(r *http.Request) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return r.Header.Get("Authorization") == "Bearer "+a.accepted
}

// A standalone stream reopened after the token was refreshed carries the
// new token, not the one its first GET had; and a reopening answered 401
// is authorized and sent again, not taken for the session's loss (issue
// 33 item 9).
func TestHTTPReopenedStreamSendsTheCurrentToken(t *testing.T) {
	web := startWeb(t, false, true)
	a := &rotatingAuth{}
	a.set("t1", "t1")
	cut := cutGETsAfter(web, func(w http.ResponseWriter, r *http.Request) bool {
		if !a.ok(r) {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return true
		}
		return false
	})
	mock := clock.NewMock()
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), Clock: mock, ProbeInterval: time.Hour, OAuth: a}, 1)
	web.waitRequest(t, isGET)

	a.set("t2", "t2") // refreshed by a call: the handler has the new one
	mock.Add(time.Minute)
	cut <- struct{}{}
	web.waitUntil(t, func() bool { return web.count(isGET) >= 2 })
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("after the first cut: %v", err)
	}

	a.set("t3", "t2") // the server moved on: only Authorize learns it
	mock.Add(time.Minute)
	cut <- struct{}{}
	web.waitUntil(t, func() bool { return web.count(isGET) >= 4 })
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("after the second cut: %v", err)
	}
	if isDoneChan(c.ended) {
		t.Fatalf("a reopening ended the session: %q", c.g.Exit().Status)
	}
	web.mu.Lock()
	var sent []string
	for _, r := range web.requests {
		if isGET(r) {
			sent = append(sent, r.Header.Get("Authorization"))
		}
	}
	web.mu.Unlock()
	a.mu.Lock()
	authorized := a.authorized
	a.mu.Unlock()
	want := []string{"Bearer t1", "Bearer t2", "Bearer t2", "Bearer t3"}
	if len(sent) < len(want) || !slices.Equal(sent[:len(want)], want) || authorized != 1 {
		t.Errorf("the GETs carried %q, want %q first; %d authorizations, want 1", sent, want, authorized)
	}
}
