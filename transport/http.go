package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the health probe of HTTP generations that no event stream
// watches (docs/design.md §8). A remote server is probed every 15 s: with
// two failures and the 5 s bound a dead server is seen within about 35 s,
// no later than the SDK sees a lost event stream (its ~23 s of retries),
// while 4 probes a minute stay well inside the rate limits of hosted
// servers (often 60 a minute) and cost a few hundred bytes each. A server
// on the loopback interface costs nothing to ask and limits nobody, so it
// is probed every second.
const (
	DefaultProbeInterval      = 15 * time.Second
	DefaultLocalProbeInterval = 1 * time.Second
	DefaultProbeFailures      = 2
	DefaultProbeTimeout       = 5 * time.Second
)

// httpDeleteBound is the SDK's own bound on the session-terminating DELETE
// that StreamableClientConn.Close sends (go-sdk closeDeleteTimeout).
const httpDeleteBound = 5 * time.Second

// httpSlack is what TerminationWindow adds to the DELETE bound: aborting
// the requests still in flight once the connection is closed, and
// scheduling noise.
const httpSlack = 1 * time.Second

// HTTP is the Opener of a Streamable HTTP MCP server, in both protocol
// eras (see the package doc). Every generation gets a fresh
// mcp.StreamableClientTransport behind an http.RoundTripper of its own,
// which injects Headers and tracks every request and response body, so
// the generation can prove them released (Gone) and see its streams end.
// Fields are read at each Open and must not change while a generation is
// open; only URL is required.
type HTTP struct {
	// URL is the server's MCP endpoint (http or https).
	URL string
	// Headers are added to every request, unless the SDK sets the same
	// header itself (its protocol headers win). Values expand ${VAR} and
	// $VAR from mcpkeep's environment at each Open (see ExpandEnv) and
	// never appear in logs or errors.
	Headers map[string]string
	// HTTPClient is the client to send with; nil means a fresh
	// http.Transport per generation (closed with it, so no keep-alive
	// connection outlives its generation). Its Timeout, if any, also cuts
	// the long-lived event streams: leave it zero.
	HTTPClient *http.Client
	// Clock drives the health probe's timers; nil means the real clock.
	Clock clock.Clock
	// ProbeInterval is the pause between health probes, ProbeFailures the
	// number of consecutive failed probes that end a generation, and
	// ProbeTimeout bounds one probe. Zero or negative means the default
	// (15 s, or 1 s for a loopback URL; 2; 5 s). A server that answers a
	// probe with 429, or 503 with Retry-After, is alive, and the next
	// probe waits at least its Retry-After (at most MaxRetryAfter).
	ProbeInterval time.Duration
	ProbeFailures int
	ProbeTimeout  time.Duration
	// Logger receives the probe's verdicts and the teardown at Debug, with
	// attributes server and gen; nil discards.
	Logger *slog.Logger
	// Server names the server in log attributes.
	Server string
	// OAuth, when set, signs requests in (docs/design.md §22): the SDK
	// asks it for a token before each request and calls its Authorize on
	// a 401 (see package oauth, whose Handler never starts a sign-in that
	// needs a person). An error matching ErrSignInRequired from it ends
	// the generation with that error as Exit().Cause. One handler serves
	// every generation. Headers must not set Authorization as well.
	OAuth auth.OAuthHandler
	// ProtocolVersion, when set, pins the protocol version of every
	// session (for example "2025-11-25" for a server that mishandles the
	// 2026-07-28 discovery); empty lets the SDK negotiate.
	ProtocolVersion string
}

// TerminationWindow bounds a generation's teardown: once Terminate was
// called, Gone closes within this window or never. It is the SDK's bound
// on the session-ending DELETE plus a small slack.
func (h *HTTP) TerminationWindow() time.Duration { return httpDeleteBound + httpSlack }

// SessionOptions pins ProtocolVersion for the supervisor's Connect; nil
// when no version is pinned.
func (h *HTTP) SessionOptions() *mcp.ClientSessionOptions {
	if h.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: h.ProtocolVersion}
}

// Open prepares generation gen. It sends nothing (the SDK's transport
// speaks only when the supervisor connects), so it fails only on a bad
// URL, header or pinned version; the error names the URL in its redacted
// form (RedactURL) and the header, never a header's value.
func (h *HTTP) Open(ctx context.Context, gen uint64) (Generation, error) {
	u, err := checkURL(h.URL)
	if err != nil {
		return nil, err
	}
	red := redactParsed(u)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("http: open %s: %w", red, err)
	}
	if v := h.ProtocolVersion; v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		return nil, fmt.Errorf("http: open %s: protocol version %q is not one of %v", red, v, mcp.SupportedProtocolVersions())
	}
	headers := ExpandEnv(h.Headers, nil)
	for k, v := range headers {
		if err := checkHeader(k, v); err != nil {
			return nil, fmt.Errorf("http: open %s: %w", red, err)
		}
		if h.OAuth != nil && http.CanonicalHeaderKey(k) == "Authorization" {
			return nil, fmt.Errorf("http: open %s: header %q: OAuth sets it", u, k)
		}
	}
	g := newHTTPGen(h, gen, u, headers)
	return g, nil
}

// checkURL parses raw as a server endpoint; errors name it redacted.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("http: bad URL %s: %s", RedactURL(raw), parseProblem(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http: bad URL %s: scheme must be http or https", redactParsed(u))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http: bad URL %s: no host", redactParsed(u))
	}
	return u, nil
}

// checkHeader rejects what net/http would reject later with a less
// helpful error: a name that is not a token, a value with control
// characters (a stray newline from an environment variable).
func checkHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("header %q: invalid name", name)
	}
	for _, c := range []byte(value) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("header %q: value has a control character", name)
		}
	}
	return nil
}

func isTokenChar(r rune) bool {
	return r < 0x7f && r > ' ' && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}

func (h *HTTP) clock() clock.Clock {
	if h.Clock == nil {
		return clock.New()
	}
	return h.Clock
}

func (h *HTTP) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

func (h *HTTP) probeConfig(u *url.URL) probeConfig {
	p := probeConfig{interval: h.ProbeInterval, failures: h.ProbeFailures, timeout: h.ProbeTimeout}
	if p.interval <= 0 {
		p.interval = DefaultProbeInterval
		if isLoopback(u.Hostname()) {
			p.interval = DefaultLocalProbeInterval
		}
	}
	if p.failures <= 0 {
		p.failures = DefaultProbeFailures
	}
	if p.timeout <= 0 {
		p.timeout = DefaultProbeTimeout
	}
	return p
}

// isLoopback reports whether host names this machine: localhost or a
// loopback address. Names are not resolved (Open sends nothing).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
