package oauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// TestRefreshRefusesRedirectElsewhere: a token endpoint that redirects
// the refresh to another origin is not followed: the other origin never
// sees the refresh token or the client's secret, the token is kept, and
// the error says why (issue 33 item 20).
func TestRefreshRefusesRedirectElsewhere(t *testing.T) {
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/token", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()

	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: "http://mcp.example/mcp"}
	e := &Entry{URL: target.URL, ClientID: "c", ClientSecret: "registered-secret", TokenURL: redirector.URL + "/token?k=tokenurlsecret",
		AccessToken: "a", RefreshToken: "r", Expiry: time.Now().Add(time.Minute)}
	if err := store.Save(e); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(HandlerOptions{Target: target, Store: store, EarlyRefresh: time.Hour})
	_, err := token(t, h)
	if !errors.Is(err, ErrTokenRedirect) || errors.Is(err, transport.ErrSignInRequired) {
		t.Fatalf("token = %v, want ErrTokenRedirect, not a sign-in", err)
	}
	if strings.Contains(err.Error(), "tokenurlsecret") {
		t.Errorf("the error shows the token URL's query: %v", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	if _, err := store.Load(target.URL, ""); err != nil {
		t.Fatalf("the token was forgotten: %v", err)
	}
}

// TestTokenRedirectRule: within the origin is followed, and http to https
// on the same host; another host, or https to http, is not.
func TestTokenRedirectRule(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"https://as.example/token", "https://as.example/v2/token", true},
		{"http://as.example/token", "https://as.example/token", true},
		{"https://as.example/token", "http://as.example/token", false},
		{"https://as.example/token", "https://evil.example/token", false},
		{"https://as.example/token", "https://as.example:8443/token", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		err := checkTokenRedirect(&http.Request{URL: to}, []*http.Request{{URL: from}})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrTokenRedirect)) {
			t.Errorf("%s -> %s: %v, want allowed %v", tc.from, tc.to, err, tc.ok)
		}
	}
}
