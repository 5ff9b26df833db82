package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/spf13/pflag"
)

// defaultOpsAddr is where `mcpkeep status` looks for a running instance
// when --addr is not given: the address to pass to --metrics-listen (or
// --listen) for status to find it without flags.
const defaultOpsAddr = "127.0.0.1:8731"

// listenOpts are the flags that serve hosts over Streamable HTTP (proxy
// and run share them).
type listenOpts struct {
	addr     string
	stdio    bool
	tokenEnv string
	origins  []string
	metrics  string // --metrics-listen: health, readiness and metrics without MCP
	token    string // read from tokenEnv by check; never logged
}

func (l *listenOpts) register(f *pflag.FlagSet) {
	f.StringVar(&l.addr, "listen", "", "serve hosts over Streamable HTTP at `ADDR`/mcp (host:port; port 0 picks one) instead of stdio")
	f.BoolVar(&l.stdio, "stdio", false, "with --listen, also serve a host on stdin/stdout")
	f.StringVar(&l.tokenEnv, "auth-token-env", "", "with --listen, require \"Authorization: Bearer <token>\" with the token in the environment variable `VAR` (required off loopback)")
	f.StringArrayVar(&l.origins, "allow-origin", nil, "with --listen, a browser `ORIGIN` allowed besides the server's own (repeatable)")
	f.StringVar(&l.metrics, "metrics-listen", "", "serve /healthz, /readyz, /metrics and the live page /ui (no MCP) at `ADDR`, e.g. "+defaultOpsAddr)
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
		// The servers inherit mcpkeep's environment at each spawn: the
		// token is for hosts, never for them (docs/design.md §19).
		_ = os.Unsetenv(l.tokenEnv)
	}
	if !proxy.IsLoopback(host) && l.token == "" {
		return fmt.Errorf("--listen: %q is not a loopback address: give --auth-token-env VAR so only holders of the token are served", l.addr)
	}
	for _, o := range l.origins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return fmt.Errorf("--allow-origin: %q is not an origin (scheme://host[:port])", o)
		}
	}
	return nil
}

// listenAndServe binds addr and serves h on it; the returned server's
// Addr is the bound address.
func listenAndServe(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Addr: ln.Addr().String(), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return hs, nil
}
