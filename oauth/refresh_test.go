package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// tokenHook is the handler's client: before the first request to the
// token endpoint it runs once (another process acting meanwhile).
type tokenHook struct {
	once   sync.Once
	before func()
}

func (h *tokenHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/token" {
		h.once.Do(h.before)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// signedIn signs in to a fresh fixture and returns it with its store and
// target.
func signedIn(t *testing.T, o authfixture.Options, c Client, lookup func(string) (string, bool)) (*authServer, *Store, Target) {
	t.Helper()
	as := newAuthServer(t, o)
	store := &Store{Dir: t.TempDir()}
	target := Target{Server: "remote", URL: as.url, Client: c}
	if _, err := Login(context.Background(), LoginOptions{Target: target, Store: store, OpenBrowser: browse, LookupEnv: lookup}); err != nil {
		t.Fatal(err)
	}
	return as, store, target
}

// refreshAside is another process refreshing the entry without the
// store's lock (an older mcpkeep): it spends the stored refresh token and
// writes the rotated one.
func refreshAside(t *testing.T, store *Store, target Target) {
	e, err := store.Load(target.URL, target.Client.ID)
	if err != nil {
		t.Error(err)
		return
	}
	resp, err := http.PostForm(e.TokenURL, url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {e.RefreshToken}, "client_id": {e.ClientID}})
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	var tok struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("refresh aside: %s %v", resp.Status, err)
		return
	}
	e.AccessToken, e.RefreshToken = tok.Access, tok.Refresh
	if err := store.write(e); err != nil {
		t.Error(err)
	}
}

// TestRefreshRereadsOnInvalidGrant: a refresh token rotated by another
// process while this one refreshed gets invalid_grant; the store is read
// again and the rotated token used, not a sign-in (issue 33 item 3).
func TestRefreshRereadsOnInvalidGrant(t *testing.T) {
	as, store, target := signedIn(t, authfixture.Options{}, Client{}, nil)
	hook := &tokenHook{before: func() { refreshAside(t, &Store{Dir: store.Dir}, target) }}
	h := NewHandler(HandlerOptions{Target: target, Store: store, EarlyRefresh: 2 * time.Hour,
		HTTPClient: &http.Client{Transport: hook}})
	got, err := token(t, h)
	if err != nil {
		t.Fatalf("token = %v, want the token refreshed from the rotated one", err)
	}
	stored, err := store.Load(as.url, "")
	if err != nil || stored.AccessToken != got {
		t.Fatalf("stored %v, the sent token stored: %v", err, err == nil && stored.AccessToken == got)
	}
	if c := as.Counts(); c.Refreshes != 2 || c.RefusedRefreshes != 1 {
		t.Fatalf("counts %+v, want the aside refresh, one refused and one more", c)
	}
}

// TestRefreshKeepsNewerSignIn: a sign-in stored while a refresh was on
// its way is not overwritten by the refresh's result (issue 33 item 3).
func TestRefreshKeepsNewerSignIn(t *testing.T) {
	as, store, target := signedIn(t, authfixture.Options{}, Client{}, nil)
	var again Entry
	hook := &tokenHook{before: func() {
		e, err := store.Load(target.URL, "")
		if err != nil {
			t.Error(err)
			return
		}
		again = *e
		again.AccessToken, again.RefreshToken = "signed-in-again", "refresh-again"
		again.SignedIn = e.SignedIn.Add(time.Second)
		if err := store.write(&again); err != nil {
			t.Error(err)
		}
	}}
	h := NewHandler(HandlerOptions{Target: target, Store: store, EarlyRefresh: 2 * time.Hour,
		HTTPClient: &http.Client{Transport: hook}})
	if _, err := token(t, h); err != nil {
		t.Fatal(err)
	}
	stored, err := store.Load(as.url, "")
	if err != nil || stored.AccessToken != "signed-in-again" || !stored.SignedIn.Equal(again.SignedIn) {
		t.Fatalf("the newer sign-in was overwritten by the refresh (err %v)", err)
	}
}

// TestRefreshInvalidClientKeepsToken: a refresh refused for another
// reason than the grant (invalid_client: a wrong secret in the
// environment) is an ordinary failure; the token is kept and works once
// the secret is right (issue 33 item 10).
func TestRefreshInvalidClientKeepsToken(t *testing.T) {
	secret := "s3cret"
	lookup := func(k string) (string, bool) { return secret, k == "MY_SECRET" }
	as, store, target := signedIn(t, authfixture.Options{Clients: map[string]string{"mine": "s3cret"}},
		Client{ID: "mine", SecretEnv: "MY_SECRET"}, lookup)
	secret = "wrong"
	h := NewHandler(HandlerOptions{Target: target, Store: store, EarlyRefresh: 2 * time.Hour, LookupEnv: lookup})
	_, err := token(t, h)
	if err == nil || errors.Is(err, transport.ErrSignInRequired) {
		t.Fatalf("token with a wrong secret = %v, want an ordinary error", err)
	}
	if _, err := store.Load(as.url, "mine"); err != nil {
		t.Fatalf("the token was forgotten: %v", err)
	}
	secret = "s3cret"
	if _, err := token(t, h); err != nil {
		t.Fatalf("token with the secret fixed = %v", err)
	}
}
