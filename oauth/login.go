package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// CallbackPath is the path of the loopback redirect.
const CallbackPath = "/callback"

// LoginOptions configure Login.
type LoginOptions struct {
	Target Target
	Store  *Store
	// Out receives what the person reads: the authorization URL and what
	// to do with it. Never a token.
	Out io.Writer
	// In, when set, is read line by line for the redirected URL, for a
	// person whose browser cannot reach this machine's loopback port. A
	// read of In still blocked when Login returns is left behind (a read
	// cannot be interrupted): pass a reader that ends, or stdin.
	In io.Reader
	// OpenBrowser, when set, opens the authorization URL (OpenBrowser in
	// this package does it with the desktop's opener). Its failure is not
	// Login's: the person can open the URL by hand.
	OpenBrowser func(url string) error
	// HTTPClient talks to the server and its authorization server; nil
	// means http.DefaultClient.
	HTTPClient *http.Client
	// LookupEnv reads the configured client's secret; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Now stamps the sign-in; nil means time.Now.
	Now func() time.Time
}

// ErrNoSignInAsked: the server accepted a connection without a token, so
// there was nothing to sign in to (and nothing was stored).
var ErrNoSignInAsked = errors.New("the server did not ask to sign in")

// Login signs in to o.Target: it connects to the server as an MCP client
// without a token, and the server's 401 starts the SDK's authorization
// flow (discovery, registration or the configured client, PKCE). The
// person's step is ours: the authorization URL is printed to Out (and
// opened with OpenBrowser), and the code comes back on the loopback
// redirect or as the redirected URL pasted on In, whichever comes first.
// The token is stored (Store.Save) and its status returned. Login ends
// when ctx does.
func Login(ctx context.Context, o LoginOptions) (TokenStatus, error) {
	t := o.Target
	if o.Store == nil {
		return TokenStatus{}, errors.New("oauth: login: no token store")
	}
	if _, err := checkURL(t.URL); err != nil {
		return TokenStatus{}, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	out := &lockedWriter{w: o.Out}
	if o.Out == nil {
		out.w = io.Discard
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Client.CallbackPort)))
	if err != nil {
		return TokenStatus{}, fmt.Errorf("oauth: login: the redirect's loopback port: %w", err)
	}
	redirect := "http://" + ln.Addr().String() + CallbackPath
	codes := newCallbacks()
	srv := &http.Server{Handler: callbackHandler(codes), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	if o.In != nil {
		go readPasted(o.In, out, codes)
	}

	var (
		gotCfg *oauth2.Config
		gotTok *oauth2.Token
	)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              o.HTTPClient,
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return fetchCode(ctx, t, a.URL, redirect, out, o.OpenBrowser, codes)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			gotCfg, gotTok = c, tok
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	// A server that asked for more scopes (Handler, insufficient_scope)
	// gets them asked for, besides the configured or discovered ones.
	var stepUp []string
	if prev, err := o.Store.Load(t.URL, t.Client.ID); err == nil {
		stepUp = prev.StepUpScopes
	}
	if len(t.Client.Scopes) > 0 || len(stepUp) > 0 {
		cfg.ScopeFilter = func(discovered []string) []string {
			if len(t.Client.Scopes) > 0 {
				discovered = t.Client.Scopes
			}
			return union(discovered, stepUp)
		}
	}
	if t.Client.MetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: t.Client.MetadataURL}
	}
	if t.Client.ID != "" {
		secret, err := t.Client.secret(o.LookupEnv)
		if err != nil {
			return TokenStatus{}, err
		}
		cc := &oauthex.ClientCredentials{ClientID: t.Client.ID}
		if secret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = cc
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{redirect},
				ClientName:              "mcpkeep",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return TokenStatus{}, fmt.Errorf("oauth: login: %w", err)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "mcpkeep", Version: "login"}, nil)
	cs, connErr := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: t.URL, OAuthHandler: h, HTTPClient: o.HTTPClient, MaxRetries: -1,
	}, nil)
	if cs != nil {
		_ = cs.Close()
	}
	if gotTok == nil {
		if connErr != nil {
			return TokenStatus{}, fmt.Errorf("oauth: login to %s: %w", t.name(), hideURL(connErr, t.URL))
		}
		return TokenStatus{}, fmt.Errorf("oauth: login to %s: %w; nothing stored", t.name(), ErrNoSignInAsked)
	}
	e := &Entry{
		URL: t.URL, ConfigClientID: t.Client.ID, Server: t.Server,
		ClientID: gotCfg.ClientID, TokenURL: gotCfg.Endpoint.TokenURL, AuthStyle: gotCfg.Endpoint.AuthStyle,
		Scopes: gotCfg.Scopes, SignedIn: now().UTC(),
	}
	if t.Client.ID == "" {
		e.ClientSecret = gotCfg.ClientSecret // issued by the registration
	}
	e.setToken(gotTok)
	if err := o.Store.Save(e); err != nil {
		return TokenStatus{}, err
	}
	st := statusOf(t, e)
	if connErr != nil {
		return st, fmt.Errorf("oauth: signed in to %s, but the connection then failed: %w", t.name(), hideURL(connErr, t.URL))
	}
	fmt.Fprintf(out, "Signed in to %s.%s\n", t.name(), st.expiresPhrase(now()))
	return st, nil
}

// union is a followed by what b adds, in order, without repeats.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// fetchCode is the person's step of the SDK's flow.
func fetchCode(ctx context.Context, t Target, authURL, redirect string, out io.Writer, open func(string) error, codes *callbacks) (*auth.AuthorizationResult, error) {
	codes.expect(authURL)
	fmt.Fprintf(out, "Sign in to %s: open this address in a browser:\n\n  %s\n\n", t.name(), authURL)
	if open != nil {
		if err := open(authURL); err != nil {
			fmt.Fprintf(out, "(No browser could be opened: %v.)\n", err)
		} else {
			fmt.Fprintln(out, "(A browser was opened.)")
		}
	}
	fmt.Fprintf(out, "Waiting for the redirect to %s. If the browser runs on another machine, paste the address it was redirected to here:\n", redirect)
	select {
	case cb := <-codes.got:
		if cb.err != nil {
			return nil, cb.err
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("oauth: login: waiting for the sign-in: %w", ctx.Err())
	}
}

// lockedWriter serializes the prompt and the paste reader's complaints.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oauth: %q is not an http(s) URL", transport.RedactURL(raw))
	}
	return u, nil
}

// hideURL is err with raw, the server's URL as configured, shown redacted
// (transport.RedactURL): the SDK and net/http quote the endpoint in their
// errors, query and all. errors.Is and As still see err.
func hideURL(err error, raw string) error {
	if err == nil || raw == "" {
		return err
	}
	if shown := transport.RedactURL(raw); shown != raw {
		return &hiddenURLError{err: err, raw: raw, shown: shown}
	}
	return err
}

type hiddenURLError struct {
	err        error
	raw, shown string
}

func (e *hiddenURLError) Error() string { return strings.ReplaceAll(e.err.Error(), e.raw, e.shown) }
func (e *hiddenURLError) Unwrap() error { return e.err }
