package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
)

// sendCallback sends a request to the loopback redirect of authURL with
// query q (state, code or error), as anything on the machine can.
func sendCallback(t *testing.T, authURL string, q url.Values) int {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp, err := http.Get(u.Query().Get("redirect_uri") + "?" + q.Encode())
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func stateOf(authURL string) string {
	u, _ := url.Parse(authURL)
	return u.Query().Get("state")
}

// TestLoginCallbackChecksState: redirects to the loopback port that are
// not this sign-in's (another state, or none) are refused and do not end
// the wait; the browser's own redirect still signs in (issue 33 item 19).
func TestLoginCallbackChecksState(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	store := &Store{Dir: t.TempDir()}
	open := func(authURL string) error {
		for _, q := range []url.Values{
			{"code": {"forged"}, "state": {"not-" + stateOf(authURL)}},
			{"code": {"forged"}},
			{"error": {"access_denied"}, "state": {"other"}},
		} {
			if got := sendCallback(t, authURL, q); got != http.StatusBadRequest {
				t.Errorf("forged callback %v answered %d, want 400", q, got)
			}
		}
		return browse(authURL)
	}
	var out strings.Builder
	if _, err := Login(context.Background(), LoginOptions{Target: Target{Server: "remote", URL: as.url}, Store: store,
		Out: &lockedWriter{w: &out}, OpenBrowser: open}); err != nil {
		t.Fatalf("Login after forged callbacks: %v\n%s", err, out.String())
	}
}

// TestLoginCallbackErrorIsPrintable: an error redirect's description
// reaches the person without its control characters (no terminal escape
// sequence gets through) (issue 33 item 19).
func TestLoginCallbackErrorIsPrintable(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	open := func(authURL string) error {
		sendCallback(t, authURL, url.Values{"error": {"access_denied\x1b[2J"}, "state": {stateOf(authURL)},
			"error_description": {"denied\x1b]0;pwned\x07\x1b[31m red\r\nforged line"}})
		return nil
	}
	_, err := Login(context.Background(), LoginOptions{Target: Target{Server: "remote", URL: as.url},
		Store: &Store{Dir: t.TempDir()}, OpenBrowser: open})
	if err == nil || !strings.Contains(err.Error(), "access_denied") || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("Login = %v, want the refusal", err)
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07\r\n") {
		t.Fatalf("Login's error carries control characters: %q", err.Error())
	}
}
