package oauth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// secretURL is a server URL holding a secret in its query.
const secretURL = "http://127.0.0.1:1/mcp?key=topsecret"

// TestSecretsInURLsAreNotShown: the sign-in error, `auth status` and a
// login's error show a server URL redacted (issue 33 item 23).
func TestSecretsInURLsAreNotShown(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	target := Target{URL: secretURL}
	_, err := token(t, NewHandler(HandlerOptions{Target: target, Store: store}))
	if !errors.Is(err, transport.ErrSignInRequired) || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("sign-in error %q shows the URL's secret", err)
	}
	var b strings.Builder
	sts, err := Status(store, []Target{target, {Server: "named", URL: secretURL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteStatus(&b, sts, time.Now()); err != nil || strings.Contains(b.String(), "topsecret") {
		t.Errorf("status shows the URL's secret (%v):\n%s", err, b.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err = Login(ctx, LoginOptions{Target: Target{Server: "named", URL: secretURL}, Store: store})
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("login error %q shows the URL's secret", err)
	}
}

// TestLoginCommand names the command that signs in: a config file's
// server with its file, a server given by URL with the URL (redacted),
// quoted for a shell where needed (issue 33 item 22).
func TestLoginCommand(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{Target{Server: "remote", URL: "http://h/mcp"}, "mcpkeep auth login remote"},
		{Target{Server: "remote", URL: "http://h/mcp", ConfigFile: "/etc/mcp.json"}, "mcpkeep auth login remote --config /etc/mcp.json"},
		{Target{Server: "remote", URL: "http://h/mcp", ConfigFile: "/it's here.json"}, `mcpkeep auth login remote --config '/it'\''s here.json'`},
		{Target{Server: "h-mcp", URL: "http://h/mcp", ByURL: true, ConfigFile: "/x"}, "mcpkeep auth login --url http://h/mcp"},
		{Target{URL: secretURL}, "mcpkeep auth login --url 'http://127.0.0.1:1/mcp?key=***'"},
	} {
		if got := tc.t.LoginCommand(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}
