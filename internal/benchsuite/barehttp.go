package benchsuite

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
)

// The floor of an HTTP hop (section 7, the stateless front): a process
// that only forwards HTTP requests to the server (Go's
// httputil.ReverseProxy, responses flushed as they come so an event
// stream passes), with no JSON-RPC at all. What it adds to a request is
// what any HTTP relay process pays on this machine (a second loopback
// connection, the request and response re-framed, a third process to
// wake) before it does any work: the part of the front's cost no code of
// mcpkeep's can remove, as the bare relay (bare.go) is the stdio hop's.

// envHTTPRelay makes the suite's binary the bare HTTP relay: its value is
// "<upstream URL> <address file>". The relay ends when its stdin does.
const envHTTPRelay = "MCPKEEP_BENCH_HTTP_RELAY"

func init() {
	if v := os.Getenv(envHTTPRelay); v != "" {
		os.Exit(bareHTTPRelay(v))
	}
}

func bareHTTPRelay(v string) int {
	probe.Start() // before main's: this process never gets there
	upstream, addrFile, ok := strings.Cut(v, " ")
	u, err := url.Parse(upstream)
	if !ok || err != nil {
		fmt.Fprintf(os.Stderr, "%s: want \"<upstream URL> <address file>\", got %q\n", envHTTPRelay, v)
		return 2
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.URL.Path = u.Path },
		FlushInterval: -1,
	}
	return serveLoopback("bare HTTP relay", addrFile, rp)
}

// serveLoopback serves h on a free loopback port, writes the address to
// addrFile (whole, by a rename) for startSelf to read, and exits when
// stdin ends: the stateless server's and the bare HTTP relay's life.
func serveLoopback(name, addrFile string, h http.Handler) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()), 0o644); err != nil {
		return 1
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return 1
	}
	_ = http.Serve(ln, h)
	return 1
}
