package transport_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://host/mcp", "https://host/mcp"},
		{"https://host/mcp?api_key=SECRET&x=1", "https://host/mcp?api_key=***&x=***"},
		{"https://user:pw@host/", "https://***@host/"},
		{"https://user@host:8443/p", "https://***@host:8443/p"},
		{"http://h/p?token", "http://h/p?***"},
		{"http://h/p?a=1&&b=", "http://h/p?a=***&&b=***"},
		{"http://h/p?a=1;b=2", "http://h/p?a=***"},
		{"http://h/p?", "http://h/p?"},
		{"http://h/p#access_token=x", "http://h/p#***"},
		{"http://h/a%2Fb?k=v", "http://h/a%2Fb?k=***"},
		{"mailto:someone@example.com?subject=x", "mailto:***?subject=***"},
		{"//user:pw@host/x", "//***@host/x"},
		{"", ""},
		// Unparsable: scheme and host only, or nothing.
		{"http://h/%zz?api_key=SECRET", "http://h/***"},
		{"http://user:p%zz@host:80/x?k=v", "http://host:80/***"},
		{"http://user:pa/ss@host/", "(unparsable URL)"},
		{"http://[::1/x?k=v", "(unparsable URL)"},
		{"http://[::1]:8080/%zz", "http://[::1]:8080/***"},
		{"%zz", "(unparsable URL)"},
		{"http://ho st/?k=v", "(unparsable URL)"},
		{"http://h\x7f/?k=v", "(unparsable URL)"},
	} {
		if got := transport.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// secretURL carries a password and a query secret; leaks checks that
// none of what the generation said contains either.
const (
	secretQuery = "SECRETq"
	secretPass  = "SECRETpw"
)

func leaks(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{secretQuery, secretPass} {
		if strings.Contains(s, secret) {
			t.Errorf("%s leaks %s: %s", what, secret, s)
		}
	}
}

// A server that cannot be reached: the SDK's error (net/http quotes the
// request URL in it), the exit status and the log name the server by its
// redacted URL.
func TestHTTPSecretsNeverLeaveOnFailure(t *testing.T) {
	var logs syncBuf
	h := &transport.HTTP{URL: "http://user:" + secretPass + "@127.0.0.1:1/mcp?api_key=" + secretQuery + "&x=1",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	g, err := h.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpkeep-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, g.Transport(), nil)
	if err == nil {
		_ = cs.Close()
		t.Fatal("Connect to a closed port succeeded")
	}
	g.Terminate()
	<-g.Gone()
	if !strings.Contains(err.Error(), "127.0.0.1:1/mcp") {
		t.Errorf("Connect error %q does not name the server", err)
	}
	leaks(t, "Connect error", err.Error())
	leaks(t, "Exit status", g.Exit().Status)
	leaks(t, "log", logs.String())
}

// A live server gets the query and the basic credentials of the URL; what
// the generation says (statuses, errors, log) never holds them.
func TestHTTPSecretsReachTheServerOnly(t *testing.T) {
	web := startWeb(t, false, false)
	type seen struct{ query, user, pass string }
	got := make(chan seen, 64)
	web.setHook(func(_ http.ResponseWriter, r *http.Request) bool {
		u, p, _ := r.BasicAuth()
		got <- seen{r.URL.RawQuery, u, p}
		return false
	})
	var logs syncBuf
	url := strings.Replace(web.URL(), "http://", "http://user:"+secretPass+"@", 1) + "?api_key=" + secretQuery + "&x=1"
	h := &transport.HTTP{URL: url, ProbeInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	c := connectWeb(t, h, 1)
	if _, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.query != "api_key="+secretQuery+"&x=1" || s.user != "user" || s.pass != secretPass {
			t.Errorf("the server saw query %q and credentials %q:%q", s.query, s.user, s.pass)
		}
	default:
		t.Fatal("the hook saw no request")
	}
	// A failing call after the server died: the SDK's error, the status.
	web.kill()
	_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil {
		t.Fatal("call to a dead server succeeded")
	}
	leaks(t, "call error", err.Error())
	c.waitEnded(t, time.Now())
	leaks(t, "Exit status", c.g.Exit().Status)
	leaks(t, "log", logs.String())
	if st := c.g.Exit().Status; !strings.Contains(st, "api_key=***&x=***") {
		t.Errorf("Exit status %q does not name the server by its redacted URL", st)
	}
}
