package oauth

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
)

// TestLoginPasted: without a browser, the person opens the printed URL
// elsewhere and pastes the redirected address; the token is stored 0600,
// with the client registered dynamically.
func TestLoginPasted(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	store := &Store{Dir: t.TempDir() + "/tokens"}
	target := Target{Server: "remote", URL: as.url}
	st, printed := pasteLogin(t, store, target)
	if !st.SignedIn || !st.Refreshable || st.Expiry.IsZero() {
		t.Fatalf("status after login = %+v", st)
	}
	if !strings.Contains(printed, "paste the address") || !strings.Contains(printed, "Signed in to remote.") ||
		!strings.Contains(printed, "That is not the redirected address") {
		t.Errorf("printed:\n%s", printed)
	}
	if c := as.Counts(); c.Registrations != 1 || c.CodeGrants != 1 {
		t.Errorf("counts = %+v, want one registration and one code grant", c)
	}
	e, err := store.Load(as.url, "")
	if err != nil || e.AccessToken == "" || e.RefreshToken == "" || e.ClientID == "" {
		t.Fatalf("stored entry: %v (empty fields)", err)
	}
	wantPrivate(t, store.path(as.url, ""))
	for _, tok := range as.Issued() {
		if strings.Contains(printed, tok) {
			t.Errorf("Login printed an issued token or secret")
		}
	}
}

// TestLoginLoopback: a browser on this machine follows the redirect to
// the loopback port; no paste is needed.
func TestLoginLoopback(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{})
	store := &Store{Dir: t.TempDir()}
	var out strings.Builder
	st, err := Login(context.Background(), LoginOptions{Target: Target{Server: "remote", URL: as.url}, Store: store,
		Out: &lockedWriter{w: &out}, OpenBrowser: browse})
	if err != nil {
		t.Fatalf("Login: %v\n%s", err, out.String())
	}
	if !st.SignedIn || !strings.Contains(out.String(), "(A browser was opened.)") {
		t.Fatalf("status %+v, printed:\n%s", st, out.String())
	}
}

// TestLoginPreregistered: a configured client id (and secret from its
// variable) is used instead of a registration.
func TestLoginPreregistered(t *testing.T) {
	as := newAuthServer(t, authfixture.Options{Clients: map[string]string{"mine": "s3cret"}})
	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: as.url, Client: Client{ID: "mine", SecretEnv: "MY_SECRET"}}
	lookup := func(k string) (string, bool) { return map[string]string{"MY_SECRET": "s3cret"}[k], k == "MY_SECRET" }
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse, LookupEnv: lookup}); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if c := as.Counts(); c.Registrations != 0 || c.CodeGrants != 1 {
		t.Errorf("counts = %+v, want no registration, one code grant", c)
	}
	e, err := store.Load(as.url, "mine")
	if err != nil || e.ClientID != "mine" || e.ClientSecret != "" {
		t.Fatalf("entry: %v; client %q, secret stored: %v", err, e.ClientID, e.ClientSecret != "")
	}
}

func wantPrivate(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
}
