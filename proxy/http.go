package proxy

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// /mcp and /metrics; a missing or wrong one gets 401 and no detail.
	// The probes (/healthz, /readyz) need none.
	Token string
	// TrustedOrigins are browser origins allowed besides the server's own
	// (scheme://host[:port]).
	TrustedOrigins []string
	// Metrics, when set, is served at /metrics (behind Token).
	Metrics http.Handler
}

// Handler serves hosts over Streamable HTTP at /mcp, any number of host
// sessions over the same servers, with /healthz, /readyz and, when given,
// /metrics beside it (docs/design.md §16). It starts the servers (Start).
//
// A browser page of another origin is refused (its Origin or
// Sec-Fetch-Site says so); DNS rebinding on loopback is the SDK
// handler's own Host check.
func (s *Server) Handler(o HTTPOptions) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, origin := range o.TrustedOrigins {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("trusted origin %q: %w", origin, err)
		}
	}
	idle := cmp.Or(s.opts.SessionIdle, DefaultSessionIdle)
	if idle < 0 {
		idle = 0
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Logger: s.opts.SDKLogger, SessionTimeout: idle})
	s.Start()
	mux := http.NewServeMux()
	mux.Handle("/mcp", bearer(o.Token, cop.Handler(h)))
	if o.Metrics != nil {
		mux.Handle("/metrics", bearer(o.Token, o.Metrics))
	}
	mux.Handle("/", s.health.Handler(s.getPool))
	return mux, nil
}

// bearer requires the token when one is set, compared in constant time.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// OpsHandler serves /healthz and /readyz alone (for a listener without
// MCP, such as --metrics-listen); metrics, when given, at /metrics.
func (s *Server) OpsHandler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	mux.Handle("/", s.health.Handler(s.getPool))
	return mux
}
