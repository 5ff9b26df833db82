package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenOpts are the flags that serve hosts over Streamable HTTP (proxy
// and run share them).
type listenOpts struct {
	addr     string
	stdio    bool
	tokenEnv string
	origins  kvList
	metrics  string // --metrics-listen: health, readiness and metrics without MCP
	token    string // read from tokenEnv by check; never logged
}

type kvList []string

func (k *kvList) String() string     { return strings.Join(*k, ",") }
func (k *kvList) Set(v string) error { *k = append(*k, v); return nil }

func (l *listenOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&l.addr, "listen", "", "serve hosts over Streamable HTTP at ADDR/mcp (host:port; port 0 picks one) instead of stdio")
	fs.BoolVar(&l.stdio, "stdio", false, "with --listen, also serve a host on stdin/stdout")
	fs.StringVar(&l.tokenEnv, "auth-token-env", "", "with --listen, require \"Authorization: Bearer <token>\" with the token in this environment variable (required off loopback)")
	fs.Var(&l.origins, "allow-origin", "with --listen, a browser Origin allowed besides the server's own (repeatable)")
	fs.StringVar(&l.metrics, "metrics-listen", "", "serve /healthz, /readyz and /metrics (no MCP) at ADDR, e.g. "+defaultOpsAddr)
}

// check validates the combination and reads the token.
func (l *listenOpts) check() error {
	if l.metrics != "" {
		if _, _, err := net.SplitHostPort(l.metrics); err != nil {
			return fmt.Errorf("--metrics-listen: %q is not host:port: %v", l.metrics, err)
		}
	}
	if l.addr == "" {
		switch {
		case l.stdio:
			return errors.New("--stdio: only with --listen")
		case l.tokenEnv != "":
			return errors.New("--auth-token-env: only with --listen")
		case len(l.origins) > 0:
			return errors.New("--allow-origin: only with --listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(l.addr)
	if err != nil {
		return fmt.Errorf("--listen: %q is not host:port: %v", l.addr, err)
	}
	if l.tokenEnv != "" {
		l.token = os.Getenv(l.tokenEnv)
		if l.token == "" {
			return fmt.Errorf("--auth-token-env: the environment variable %s is empty or unset", l.tokenEnv)
		}
	}
	if !loopback(host) && l.token == "" {
		return fmt.Errorf("--listen: %q is not a loopback address: give --auth-token-env VAR so only holders of the token are served", l.addr)
	}
	for _, o := range l.origins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return fmt.Errorf("--allow-origin: %q is not an origin (scheme://host[:port])", o)
		}
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpFront serves the front's MCP server over Streamable HTTP, and the
// operations endpoints beside it.
type httpFront struct {
	srv *http.Server
	ln  net.Listener
	mcp *mcp.StreamableHTTPHandler
}

// serve binds and serves; extra, when set, serves the other paths
// (health, readiness, metrics).
func (l *listenOpts) serve(f *front, sdkLog *slog.Logger, extra http.Handler) (*httpFront, error) {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv },
		&mcp.StreamableHTTPOptions{Logger: sdkLog})
	cop := http.NewCrossOriginProtection()
	for _, o := range l.origins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			ln.Close()
			return nil, fmt.Errorf("--allow-origin: %w", err)
		}
	}
	mux := http.NewServeMux()
	// A browser page of another origin is refused (its Origin or
	// Sec-Fetch-Site says so); DNS rebinding on loopback is the SDK
	// handler's own Host check.
	mux.Handle("/mcp", l.auth(cop.Handler(h)))
	if extra != nil {
		mux.Handle("/metrics", l.auth(extra))
		mux.Handle("/", extra)
	}
	hf := &httpFront{ln: ln, mcp: h, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go hf.srv.Serve(ln)
	return hf, nil
}

// auth requires the bearer token when one is set; a missing or wrong
// token gets 401 and nothing else.
func (l *listenOpts) auth(next http.Handler) http.Handler {
	if l.token == "" {
		return next
	}
	want := []byte("Bearer " + l.token)
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

// Addr is the address the listener bound.
func (h *httpFront) Addr() string { return h.ln.Addr().String() }

// shutdown stops accepting and lets requests in flight finish for up to
// grace; then it ends the host sessions, whose open streams (a session's
// GET, a 2026-07-28 listen) would keep the server waiting, and waits for
// the rest, bounded by ctx.
func (h *httpFront) shutdown(ctx context.Context, f *front, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(ctx) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	for ss := range f.srv.Sessions() {
		_ = ss.Close()
	}
	return <-done
}
