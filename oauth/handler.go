package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultEarlyRefresh is how long before its expiry a token is refreshed.
const DefaultEarlyRefresh = time.Minute

// tokenTimeout bounds one request to the token endpoint when the caller
// supplies no client: a refresh runs inside the SDK's request, which must
// not hang on a silent authorization server.
const tokenTimeout = 30 * time.Second

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	Target Target
	Store  *Store
	// HTTPClient sends the refreshes; nil means a client with a 30 s
	// timeout. Either way a redirect to another origin, or from https to
	// http, is not followed (ErrTokenRedirect).
	HTTPClient *http.Client
	// EarlyRefresh is how long before expiry a token is refreshed; zero or
	// negative means DefaultEarlyRefresh.
	EarlyRefresh time.Duration
	// LookupEnv reads the configured client's secret; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Handler is the auth.OAuthHandler of a supervised server
// (transport.HTTP.OAuth). It sends the stored token, refreshes it before
// it expires and when the server rejects it, and writes what the refresh
// returns back to the store, under the entry's file lock (refresh.go), so
// processes sharing the store never spend one refresh token twice. It
// never starts a sign-in: when only a person can help it returns a
// *transport.SignInRequiredError naming the command to run, and forgets a
// refresh token the authorization server refused (invalid_grant). It reads
// the store again whenever the store's file changed, so a token stored by
// `mcpkeep auth login` is used by the next request (a generation that
// already ended for it needs a Reconnect, see Watch).
type Handler struct {
	o      HandlerOptions
	client *http.Client

	mu    sync.Mutex
	entry *Entry    // nil: not signed in
	mod   time.Time // the store file's modification time when read
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns the handler of o.Target.
func NewHandler(o HandlerOptions) *Handler {
	if o.EarlyRefresh <= 0 {
		o.EarlyRefresh = DefaultEarlyRefresh
	}
	return &Handler{o: o, client: tokenClient(o.HTTPClient)}
}

// TokenSource implements auth.OAuthHandler.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return handlerTokens{h}, nil
}

type handlerTokens struct{ h *Handler }

func (t handlerTokens) Token() (*oauth2.Token, error) { return t.h.token() }

func (h *Handler) token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(false); err != nil {
		return nil, err
	}
	if h.entry == nil {
		return nil, h.signIn("not signed in")
	}
	if !h.fresh(h.entry) {
		if err := h.refresh(h.entry.AccessToken, false); err != nil {
			return nil, err
		}
		if h.entry == nil { // a logout removed it as the refresh ended
			return nil, h.signIn("not signed in")
		}
	}
	return h.entry.token(), nil
}

// fresh: e's access token is good for longer than EarlyRefresh (or has no
// expiry).
func (h *Handler) fresh(e *Entry) bool {
	return e.Expiry.IsZero() || time.Now().Add(h.o.EarlyRefresh).Before(e.Expiry)
}

// Authorize implements auth.OAuthHandler: the server answered 401 (or 403).
// A token newer than the one the request carried (another request
// refreshed it, or a sign-in stored one) is retried; otherwise the token
// is refreshed now, whatever its expiry says. A refused refresh, or a
// token without a refresh token, needs a person.
func (h *Handler) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	insufficientScope := false
	var asked []string
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			insufficientScope = true
			asked = strings.Fields(c.Params["scope"])
		}
	}
	if resp.StatusCode == http.StatusForbidden && !insufficientScope {
		// A plain refusal, not about the token: the SDK retries once and
		// reports the answer (as its own AuthorizationCodeHandler does).
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(true); err != nil {
		return err
	}
	if h.entry == nil {
		return h.signIn("not signed in")
	}
	sent := strings.TrimSpace(strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer"))
	if sent != h.entry.AccessToken {
		return nil // a newer token than the request's: retry with it
	}
	if insufficientScope {
		return h.stepUp(asked)
	}
	return h.refresh(sent, true)
}

// stepUp records the scopes the server asked for beyond the token's, so
// the next login asks for them (StepUpScopes), and needs a person: a new
// scope is a new consent, which no refresh can give.
func (h *Handler) stepUp(asked []string) error {
	reason := "the server asks for more scopes than were granted"
	if len(asked) == 0 {
		return h.signIn(reason)
	}
	reason += ": " + strings.Join(asked, " ")
	t := h.o.Target
	err := h.o.Store.withLock(t.URL, t.Client.ID, func() error {
		// The entry as stored now: a refresh or a sign-in by another
		// process since this one read it is kept, with the scopes added.
		cur, err := h.o.Store.Load(t.URL, t.Client.ID)
		if err != nil {
			return err
		}
		next := *cur
		next.StepUpScopes = union(union(cur.Scopes, cur.StepUpScopes), asked)
		if err := h.o.Store.swap(cur, &next); err != nil {
			return err
		}
		h.adoptStored(&next)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotSignedIn) {
		return err
	}
	return h.signIn(reason)
}

// exchange trades e's refresh token for a new token, every time it is
// asked (the oauth2 package's own refreshing source would hand out its
// cached token until 10 s before expiry, defeating EarlyRefresh).
func (h *Handler) exchange(e *Entry) (*oauth2.Token, error) {
	cfg, err := h.config(e)
	if err != nil {
		return nil, err
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	return cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: e.RefreshToken}).Token()
}

func (h *Handler) config(e *Entry) (*oauth2.Config, error) {
	secret := e.ClientSecret
	if h.o.Target.Client.ID != "" {
		s, err := h.o.Target.Client.secret(h.o.LookupEnv)
		if err != nil {
			return nil, err
		}
		secret = s
	}
	return &oauth2.Config{
		ClientID: e.ClientID, ClientSecret: secret, Scopes: e.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: e.AuthStyle},
	}, nil
}

// sync reads the store's entry again when its file changed (or always,
// with force).
func (h *Handler) sync(force bool) error {
	s, t := h.o.Store, h.o.Target
	path := s.path(t.URL, t.Client.ID)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		h.entry, h.mod = nil, time.Time{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if !force && h.entry != nil && st.ModTime().Equal(h.mod) {
		return nil
	}
	e, mod, err := s.load(path)
	if errors.Is(err, fs.ErrNotExist) {
		h.entry, h.mod = nil, time.Time{}
		return nil
	}
	if err != nil {
		return err
	}
	h.entry, h.mod = e, mod
	return nil
}

// adoptStored makes e, just written, the handler's entry.
func (h *Handler) adoptStored(e *Entry) {
	mod := time.Time{}
	if st, err := os.Stat(h.o.Store.path(e.URL, e.ConfigClientID)); err == nil {
		mod = st.ModTime()
	}
	h.entry, h.mod = e, mod
}

func (h *Handler) signIn(reason string) error {
	t := h.o.Target
	return &transport.SignInRequiredError{Server: t.name(), Reason: reason, Login: t.LoginCommand()}
}
