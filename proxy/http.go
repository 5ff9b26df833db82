package proxy

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

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

// crossOrigin is the browser-origin check of /mcp and the live page.
func (o HTTPOptions) crossOrigin() (*http.CrossOriginProtection, error) {
	cop := http.NewCrossOriginProtection()
	for _, origin := range o.TrustedOrigins {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("trusted origin %q: %w", origin, err)
		}
	}
	return cop, nil
}

// Handler serves hosts over Streamable HTTP at /mcp, any number of host
// sessions over the same servers, hosts of both eras on the one endpoint
// (era.go), with /healthz, /readyz and, when given,
// /metrics beside it (docs/design.md §16). It starts the servers (Start).
//
// A browser page of another origin is refused (its Origin or
// Sec-Fetch-Site says so); DNS rebinding on loopback is the SDK
// handler's own Host check.
func (s *Server) Handler(o HTTPOptions) (http.Handler, error) {
	cop, err := o.crossOrigin()
	if err != nil {
		return nil, err
	}
	idle := cmp.Or(s.opts.SessionIdle, DefaultSessionIdle)
	if idle < 0 {
		idle = 0
	}
	front := func(*http.Request) *mcp.Server { return s.srv }
	// Both eras on one endpoint (era.go, docs/design.md §24).
	h := &eraMux{
		legacy: mcp.NewStreamableHTTPHandler(front, &mcp.StreamableHTTPOptions{Logger: s.opts.SDKLogger, SessionTimeout: idle}),
		// A plain tools/call takes the fast path (httpfast.go, §24). On
		// 2026-07-28 the POST is the request's whole life: a host that
		// hangs up has cancelled it, and its handler's context (the
		// bridge's round, bridge.go) ends with it, cancelling the
		// server's call; the SDK ties them only when asked.
		modern: s.httpFast(taskHeaders(mcp.NewStreamableHTTPHandler(front, &mcp.StreamableHTTPOptions{Logger: s.opts.SDKLogger, Stateless: true,
			PropagateRequestCancellation: true}))), // tasks_headers.go
	}
	s.Start()
	mux := http.NewServeMux()
	// Another replica's handle is forwarded to it (replicas.go, §26).
	mux.Handle("/mcp", bearer(o.Token, cop.Handler(boundWrites(s.route(h), hostWriteBound))))
	if o.Metrics != nil {
		mux.Handle("/metrics", rebindGuard(bearer(o.Token, o.Metrics)))
	}
	ui := s.uiHandler(o.Token, cop) // the live page, docs/design.md §28
	mux.Handle("/ui/", ui)
	mux.Handle("/ui", ui)
	mux.Handle("/", s.health.Handler(s.getPool, o.Token))
	return mux, nil
}

// bearer requires the token when one is set.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !carriesToken(r, token) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// carriesToken reports whether r carries "Authorization: Bearer token"
// (token not empty), compared in constant time.
func carriesToken(r *http.Request, token string) bool {
	got := []byte(r.Header.Get("Authorization"))
	return token != "" && subtle.ConstantTimeCompare(got, []byte("Bearer "+token)) == 1
}

// OpsHandler serves /healthz, /readyz and the live page /ui (for a
// listener without MCP, such as --metrics-listen); metrics, when given,
// at /metrics. Like the probes, /metrics on a loopback listener refuses
// a Host that is not loopback (DNS rebinding, docs/design.md §19).
func (s *Server) OpsHandler(metrics http.Handler) http.Handler {
	h, _ := s.OpsHandlerWith(HTTPOptions{Metrics: metrics}) // no origins: cannot fail
	return h
}

// OpsHandlerWith is OpsHandler with o's Token and TrustedOrigins applied
// to the live page (docs/design.md §28); /metrics and the probes stay as
// OpsHandler serves them.
func (s *Server) OpsHandlerWith(o HTTPOptions) (http.Handler, error) {
	cop, err := o.crossOrigin()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if o.Metrics != nil {
		mux.Handle("/metrics", rebindGuard(o.Metrics))
	}
	ui := s.uiHandler(o.Token, cop)
	mux.Handle("/ui/", ui)
	mux.Handle("/ui", ui)
	mux.Handle("/", s.health.Handler(s.getPool, ""))
	return mux, nil
}

// hostWriteBound is the longest one write to an HTTP host may block: a
// host that holds its stream open without reading loses its connection
// then, instead of holding whatever wrote to it (docs/design.md §19).
const hostWriteBound = 30 * time.Second

// boundWrites gives every write of next's responses a deadline.
func boundWrites(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&boundedWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}, r)
	})
}

type boundedWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	_ = b.rc.SetWriteDeadline(time.Now().Add(b.d))
	return b.ResponseWriter.Write(p)
}

func (b *boundedWriter) Flush() {
	_ = b.rc.SetWriteDeadline(time.Now().Add(b.d))
	_ = b.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
