package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

func token(t *testing.T, h *Handler) (string, error) {
	t.Helper()
	ts, err := h.TokenSource(context.Background())
	if err != nil {
		return "", err
	}
	tok, err := ts.Token()
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// TestHandlerNotSignedIn: no token is a sign-in, naming the command, for
// a configured server and for one run with --url.
func TestHandlerNotSignedIn(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{Server: "remote", URL: "http://h/mcp"}, `sign-in required for server "remote" (not signed in): run: mcpkeep auth login remote`},
		{Target{URL: "http://h/mcp"}, `sign-in required for server "http://h/mcp" (not signed in): run: mcpkeep auth login --url http://h/mcp`},
	} {
		_, err := token(t, NewHandler(HandlerOptions{Target: tc.target, Store: s}))
		var se *transport.SignInRequiredError
		if !errors.Is(err, transport.ErrSignInRequired) || !errors.As(err, &se) || err.Error() != tc.want {
			t.Errorf("token = %v, want %q", err, tc.want)
		}
	}
}

// TestHandlerRefreshesBeforeExpiry: a token within EarlyRefresh of its
// expiry is refreshed before it is sent (no 401 needed), and the rotated
// refresh token is stored; a sign-in stored after the handler was made is
// used at once.
func TestHandlerRefreshesBeforeExpiry(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{AccessTTL: 30 * time.Second})
	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: as.url}
	h := NewHandler(HandlerOptions{Target: target, Store: store}) // before the sign-in
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse}); err != nil {
		t.Fatal(err)
	}
	signedIn, _ := store.Load(as.url, "")
	got, err := token(t, h)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := store.Load(as.url, "")
	if got == signedIn.AccessToken || stored.AccessToken != got || stored.RefreshToken == signedIn.RefreshToken ||
		!stored.SignedIn.Equal(signedIn.SignedIn) {
		t.Fatalf("no early refresh stored: sent the signed-in token %v, stored the sent one %v, refresh token rotated %v",
			got == signedIn.AccessToken, stored.AccessToken == got, stored.RefreshToken != signedIn.RefreshToken)
	}
	if c := as.Counts(); c.Refreshes != 1 || c.Unauthorized != 0 {
		t.Fatalf("counts %+v, want one refresh and no 401", c)
	}
}

// TestHandlerRefusedRefreshForgets: a refresh the authorization server
// refuses clears the store and is a sign-in.
func TestHandlerRefusedRefreshForgets(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{AccessTTL: 30 * time.Second})
	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: as.url}
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse}); err != nil {
		t.Fatal(err)
	}
	as.RevokeRefresh()
	_, err := token(t, NewHandler(HandlerOptions{Target: target, Store: store}))
	if !errors.Is(err, transport.ErrSignInRequired) || !strings.Contains(err.Error(), "the refresh was refused: invalid_grant") {
		t.Fatalf("token = %v", err)
	}
	if _, err := store.Load(as.url, ""); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("refused token still stored: %v", err)
	}
}

// TestStatus lists each target's sign-in without a token.
func TestStatus(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	store := &Store{Dir: t.TempDir()}
	in := Target{Server: "in", URL: as.url}
	out := Target{Server: "out", URL: "http://127.0.0.1:1/mcp"}
	if _, err := Login(context.Background(), LoginOptions{Target: in, Store: store, OpenBrowser: browse}); err != nil {
		t.Fatal(err)
	}
	sts, err := Status(store, []Target{in, out})
	if err != nil || len(sts) != 2 || !sts[0].SignedIn || sts[1].SignedIn {
		t.Fatalf("Status = %+v, %v", sts, err)
	}
	var b strings.Builder
	if err := WriteStatus(&b, sts, time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "signed in; token expires") || !strings.Contains(lines[0], "refreshable") ||
		!strings.HasSuffix(lines[1], "not signed in: run: mcpkeep auth login out") {
		t.Fatalf("WriteStatus:\n%s", b.String())
	}
	for _, tok := range as.Issued() {
		if strings.Contains(b.String(), tok) {
			t.Fatal("status shows a token")
		}
	}
}

// TestHandlerStepUp: a 403 insufficient_scope naming more scopes is a
// sign-in that says which, the store remembers them, and the next login
// asks for them besides the ones discovered (and forgets them after).
func TestHandlerStepUp(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: as.url}
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse}); err != nil {
		t.Fatal(err)
	}
	signedIn, _ := store.Load(as.url, "")
	if slices.Contains(signedIn.Scopes, "mcp:write") {
		t.Fatalf("first login asked for %q already", signedIn.Scopes)
	}
	h := NewHandler(HandlerOptions{Target: target, Store: store})
	req := httptest.NewRequest(http.MethodPost, as.url, nil)
	req.Header.Set("Authorization", "Bearer "+signedIn.AccessToken)
	resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: http.NoBody}
	resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp mcp:write"`)
	err := h.Authorize(context.Background(), req, resp)
	if !errors.Is(err, transport.ErrSignInRequired) || !strings.Contains(err.Error(), "more scopes than were granted: mcp mcp:write") {
		t.Fatalf("Authorize = %v, want a sign-in naming the scopes", err)
	}
	e, _ := store.Load(as.url, "")
	if !slices.Contains(e.StepUpScopes, "mcp:write") || e.AccessToken != signedIn.AccessToken {
		t.Fatalf("stored step-up scopes %q (token kept: %v)", e.StepUpScopes, e.AccessToken == signedIn.AccessToken)
	}
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse}); err != nil {
		t.Fatal(err)
	}
	e, _ = store.Load(as.url, "")
	if !slices.Contains(e.Scopes, "mcp:write") || !slices.Contains(e.Scopes, authfixture.Scope) || len(e.StepUpScopes) != 0 {
		t.Fatalf("after the second login: scopes %q, step-up %q", e.Scopes, e.StepUpScopes)
	}
}
