package transport_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// idpServer plays a sign-in gateway's identity provider on another
// origin: it records what reached it.
type idpServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func startIdP(t *testing.T) *idpServer {
	t.Helper()
	s := &idpServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>sign in</html>"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *idpServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// The secrets a redirect must not carry elsewhere.
const (
	redirBearer = "Bearer HEADER-SECRET"
	redirAPIKey = "KEY-SECRET"
	redirQuery  = "QUERY-SECRET"
)

func redirectHTTP(web *webServer) *transport.HTTP {
	u := strings.Replace(web.URL(), "http://", "http://user:PASS-SECRET@", 1) + "?token=" + redirQuery
	return &transport.HTTP{URL: u, Headers: map[string]string{"Authorization": redirBearer, "X-Api-Key": redirAPIKey}}
}

// An SSO gateway answering with a redirect to its identity provider on
// another origin: the request fails with ErrRedirect naming the redacted
// target, and nothing reaches the other origin, so no credential does.
func TestHTTPRedirectToOtherOriginRefused(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			web := startWeb(t, true, false)
			idp := startIdP(t)
			c := connectWeb(t, redirectHTTP(web), 1)
			web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodPost {
					return false
				}
				http.Redirect(w, r, idp.URL+"/authorize?state=STATE-SECRET", code)
				return true
			})
			ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
			defer cancel()
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if got := idp.requests(); len(got) != 0 {
				r := got[0]
				t.Errorf("the other origin received %d requests (Authorization %q, X-Api-Key %q, query %q)",
					len(got), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.URL.RawQuery)
			}
			if !errors.Is(err, transport.ErrRedirect) {
				t.Fatalf("CallTool error = %v; want ErrRedirect", err)
			}
			var re *transport.RedirectError
			if !errors.As(err, &re) || re.Target != idp.URL+"/authorize?state=***" {
				t.Errorf("RedirectError = %+v; want the redacted target", re)
			}
			msg := err.Error()
			for _, want := range []string{"another origin", "misconfigured", "sign-in", idp.URL + "/authorize?state=***"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			for _, secret := range []string{"STATE-SECRET", redirQuery, "PASS-SECRET", "HEADER-SECRET", redirAPIKey} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q leaks %q", msg, secret)
				}
			}
			if st := c.g.Exit().Status; !strings.Contains(st, "refused") {
				t.Errorf("Exit().Status = %q; want the refused redirect", st)
			}
		})
	}
}

// https to plain http on the same host is refused too.
func TestHTTPRedirectDowngradeRefused(t *testing.T) {
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace("http://"+r.Host+"/mcp", "https", "http", 1), http.StatusTemporaryRedirect)
	}))
	defer secure.Close()
	h := &transport.HTTP{URL: secure.URL + "/mcp", HTTPClient: secure.Client(),
		Headers: map[string]string{"Authorization": redirBearer}}
	g, err := h.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Terminate(); <-g.Gone() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	_, err = client.Connect(ctx, g.Transport(), nil)
	var re *transport.RedirectError
	if !errors.As(err, &re) || !re.Downgrade || !strings.Contains(err.Error(), "plain http") {
		t.Fatalf("Connect error = %v; want a refused downgrade", err)
	}
}

// A redirect within the endpoint's origin is followed, is no failure, and
// the endpoint's query secret goes to the endpoint alone.
func TestHTTPRedirectSameOriginFollowed(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, redirectHTTP(web), 1)
	var moved sync.Map // the query each moved request carried
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		if r.URL.Path == "/mcp" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return true
		}
		moved.Store(r.URL.RawQuery, r.Header.Get("X-Api-Key"))
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("CallTool through a same-origin redirect: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hi" {
		t.Errorf("result %+v", res.Content)
	}
	n := 0
	moved.Range(func(q, key any) bool {
		n++
		if strings.Contains(q.(string), redirQuery) {
			t.Errorf("the moved path got the endpoint's query %q", q)
		}
		if key != redirAPIKey {
			t.Errorf("the moved path (same origin) got X-Api-Key %q; want the configured one", key)
		}
		return true
	})
	if n == 0 {
		t.Fatal("no request reached the moved path")
	}
	if st := c.g.Exit().Status; st != "" {
		t.Errorf("Exit().Status = %q; a followed redirect is no failure", st)
	}
}
