package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// ErrSignInRequired: the server wants a bearer token that only a person
// can obtain (no token stored, the refresh was refused, a token the
// server rejects and that cannot be renewed). Retrying does not help, so
// the supervisor stops at once instead of spending its budget
// (docs/design.md §22). Errors that match it are *SignInRequiredError.
var ErrSignInRequired = errors.New("sign-in required")

// SignInRequiredError says which server needs a person and what to run.
// It never carries a token. errors.Is matches ErrSignInRequired.
type SignInRequiredError struct {
	Server string
	// Reason is why no token can be had: "not signed in", "the refresh
	// was refused (invalid_grant)", ...
	Reason string
	// Login is the command that signs in ("mcpkeep auth login NAME").
	Login string
}

func (e *SignInRequiredError) Error() string {
	msg := "sign-in required"
	if e.Server != "" {
		msg += fmt.Sprintf(" for server %q", e.Server)
	}
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.Login != "" {
		msg += ": run: " + e.Login
	}
	return msg
}

// Is makes errors.Is(err, ErrSignInRequired) hold.
func (e *SignInRequiredError) Is(target error) bool { return target == ErrSignInRequired }

// genAuth is the OAuthHandler one generation hands the SDK: the HTTP
// server's handler, watched. The SDK reports a failed token or sign-in to
// the request that needed it, and keeps the connection open (it wraps the
// error as a rejection). A generation whose server needs a person is of
// no more use, so it records why (Exit().Cause) and ends itself: the
// supervisor sees the loss, reads the cause, and stops (docs/design.md §22).
type genAuth struct {
	g *httpGen
	h auth.OAuthHandler
}

func (a genAuth) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	ts, err := a.h.TokenSource(ctx)
	if err != nil {
		a.g.signIn(err)
		return nil, err
	}
	if ts == nil {
		return nil, nil
	}
	return genTokens{a.g, ts}, nil
}

func (a genAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := a.h.Authorize(ctx, req, resp)
	a.g.signIn(err)
	return err
}

type genTokens struct {
	g  *httpGen
	ts oauth2.TokenSource
}

func (t genTokens) Token() (*oauth2.Token, error) {
	tok, err := t.ts.Token()
	t.g.signIn(err)
	return tok, err
}

// signIn ends the generation when err says that only a person can help.
func (g *httpGen) signIn(err error) {
	if !errors.Is(err, ErrSignInRequired) {
		return
	}
	g.mu.Lock()
	if g.cause == nil {
		g.cause = err
	}
	g.mu.Unlock()
	// The SDK calls the handler with its connection's lock held; ending
	// the generation only starts the teardown (which closes the
	// connection on a goroutine of its own), so this cannot deadlock.
	g.endItself(ErrSignInRequired.Error())
}

// bearer puts the handler's current token on req, a reopening of the
// standalone event stream: the SDK set the token of the moment it first
// sent the GET, and a refresh since has made that one stale (a stale
// token is answered 401, which would read as the session lost).
// Without a handler, or when it has no token, req is left as it is.
func (g *httpGen) bearer(req *http.Request) {
	if g.oauth == nil {
		return
	}
	ts, err := g.oauth.TokenSource(req.Context())
	if err != nil || ts == nil {
		return
	}
	if tok, err := ts.Token(); err == nil && tok != nil && tok.AccessToken != "" {
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
}

// reauthorize handles a 401 (or 403) to a reopening as the SDK handles one
// to its own requests: the handler's Authorize (a refresh, or a sign-in
// error that ends the generation). true: send the reopening again, with
// the handler's token. resp's body is consumed.
func (g *httpGen) reauthorize(req *http.Request, resp *http.Response) bool {
	if g.oauth == nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return false
	}
	err := g.oauth.Authorize(req.Context(), req, resp)
	resp.Body.Close() // a handler need not close it; closing twice is harmless
	return err == nil
}
