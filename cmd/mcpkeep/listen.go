package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
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
