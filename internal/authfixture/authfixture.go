// Package authfixture is an OAuth 2.1 authorization server for tests, in
// front of an MCP server's Streamable HTTP handler that it guards with
// bearer tokens (docs/design.md §22). One origin serves both roles:
//
//	/.well-known/oauth-protected-resource[/mcp]  RFC 9728 metadata
//	/.well-known/oauth-authorization-server      RFC 8414 metadata
//	/register                                    RFC 7591 dynamic registration
//	/authorize                                   redirects at once (no person), PKCE S256 required
//	/token                                       authorization_code and refresh_token grants
//	/mcp                                         the guarded MCP handler (auth.RequireBearerToken)
//
// Tests drive what a person or an operator would: ExpireAccess makes every
// access token issued so far invalid (the server then answers 401),
// RevokeRefresh every refresh token (a refresh then gets invalid_grant).
// Refresh tokens rotate at every refresh. Issued lists every token and
// client secret it ever issued, so a test can look for them where they
// must not be. Nothing here is for production: no persistence, no
// consent, no user.
package authfixture

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Scope is the scope the resource asks for.
const Scope = "mcp"

// Options configure a Server.
type Options struct {
	// AccessTTL is the access tokens' expires_in; zero means an hour.
	AccessTTL time.Duration
	// Clients are preregistered: id → secret ("" for a public client).
	// Their redirect URIs are not checked beyond being loopback.
	Clients map[string]string
}

// Server is the fixture. Its zero value is not usable: use New.
type Server struct {
	opts Options
	mcp  http.Handler

	mu        sync.Mutex
	clients   map[string]client
	codes     map[string]grant
	access    map[string]tokenInfo
	refresh   map[string]grant
	issued    []string
	counts    Counts
	expiredAt int // access tokens with a serial below it are invalid
	serial    int
}

// Counts are what the fixture answered.
type Counts struct {
	Registrations, Authorizations, CodeGrants, Refreshes, RefusedRefreshes, Unauthorized int
}

type client struct {
	secret    string
	redirects []string
	public    bool
}

type grant struct {
	clientID, challenge, redirect, scope string
}

type tokenInfo struct {
	serial int
	expiry time.Time
	scope  string
}

// New returns a fixture guarding mcpHandler.
func New(mcpHandler http.Handler, o Options) *Server {
	if o.AccessTTL <= 0 {
		o.AccessTTL = time.Hour
	}
	s := &Server{opts: o, mcp: mcpHandler, clients: map[string]client{}, codes: map[string]grant{},
		access: map[string]tokenInfo{}, refresh: map[string]grant{}}
	for id, secret := range o.Clients {
		s.clients[id] = client{secret: secret, public: secret == ""}
	}
	return s
}

// ExpireAccess invalidates every access token issued so far.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expiredAt = s.serial + 1
}

// RevokeRefresh invalidates every refresh token issued so far.
func (s *Server) RevokeRefresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// Issued returns every token and client secret issued so far.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Counts returns what the fixture answered so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// ServeHTTP routes to the metadata, the authorization endpoints and the
// guarded MCP handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/.well-known/oauth-protected-resource"):
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: base + "/mcp", AuthorizationServers: []string{base}, ScopesSupported: []string{Scope},
		}).ServeHTTP(w, r)
	case p == "/.well-known/oauth-authorization-server":
		writeJSON(w, http.StatusOK, &oauthex.AuthServerMeta{
			Issuer: base, AuthorizationEndpoint: base + "/authorize", TokenEndpoint: base + "/token",
			RegistrationEndpoint: base + "/register", ScopesSupported: []string{Scope, "offline_access"},
			ResponseTypesSupported: []string{"code"}, GrantTypesSupported: []string{"authorization_code", "refresh_token"},
			CodeChallengeMethodsSupported:              []string{"S256"},
			TokenEndpointAuthMethodsSupported:          []string{"none", "client_secret_post", "client_secret_basic"},
			AuthorizationResponseIssParameterSupported: true,
		})
	case p == "/register":
		s.register(w, r)
	case p == "/authorize":
		s.authorize(w, r, base)
	case p == "/token":
		s.token(w, r)
	case p == "/mcp":
		guard := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp",
		})
		guard(s.mcp).ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ti, ok := s.access[tok]
	if !ok || ti.serial < s.expiredAt || time.Now().After(ti.expiry) {
		s.counts.Unauthorized++
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: strings.Fields(ti.scope), Expiration: ti.expiry}, nil
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil || len(m.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Registrations++
	id := "client-" + rand.Text()
	c := client{redirects: m.RedirectURIs, public: m.TokenEndpointAuthMethod == "none"}
	if !c.public {
		c.secret = s.mint()
		if m.TokenEndpointAuthMethod == "" {
			m.TokenEndpointAuthMethod = "client_secret_basic"
		}
	}
	s.clients[id] = c
	writeJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{
		ClientID: id, ClientSecret: c.secret, ClientRegistrationMetadata: m,
	})
}

// authorize redirects at once: the fixture's person always consents.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, base string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case c.redirects != nil && !slices.Contains(c.redirects, redirect),
		!strings.HasPrefix(redirect, "http://127.0.0.1:"):
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	s.counts.Authorizations++
	code := "code-" + rand.Text()
	s.codes[code] = grant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"),
		redirect: redirect, scope: q.Get("scope")}
	to := redirect + "?code=" + code + "&state=" + url.QueryEscape(q.Get("state")) + "&iss=" + url.QueryEscape(base)
	http.Redirect(w, r, to, http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.clientAuth(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok = s.codes[code]
		delete(s.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.clientID != id || g.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		s.counts.CodeGrants++
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		g, ok = s.refresh[rt]
		if !ok || g.clientID != id {
			s.counts.RefusedRefreshes++
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		delete(s.refresh, rt) // rotation: a refresh token is good once
		s.counts.Refreshes++
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access, refresh := s.mint(), s.mint()
	s.serial++
	s.access[access] = tokenInfo{serial: s.serial, expiry: time.Now().Add(s.opts.AccessTTL), scope: g.scope}
	s.refresh[refresh] = g
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.opts.AccessTTL / time.Second), "scope": g.scope,
	})
}

// clientAuth authenticates the client (basic, post, or none for a public
// client); with s.mu held.
func (s *Server) clientAuth(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, ok := s.clients[id]
	if !ok {
		return "", false
	}
	return id, c.public || secret == c.secret
}

// mint makes a token or secret and remembers it; with s.mu held.
func (s *Server) mint() string {
	t := rand.Text() + rand.Text()
	s.issued = append(s.issued, t)
	return t
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}
