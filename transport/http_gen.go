package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpGen is one generation of an HTTP server: the SDK's transport, the
// connection it yields, and the round tripper that sees every request of
// that connection.
//
// The connection is handed to the SDK as it is, not wrapped: the SDK
// tells its own connection about the negotiated session through an
// unexported interface (sessionUpdated), which is what sets the protocol
// version header and opens the legacy era's standalone event stream. A
// wrapper cannot forward an unexported method, so the generation observes
// the connection from outside instead: it keeps the value Connect
// returned (to close it), and watches the HTTP traffic below it.
type httpGen struct {
	n     uint64
	url   string // redacted: the form every message uses
	log   *slog.Logger
	clock clock.Clock
	probe probeConfig
	sdk   *mcp.StreamableClientTransport
	// ownBase is the http.Transport made for this generation alone (nil
	// when the host's client is used); its idle connections are closed
	// with the generation.
	ownBase *http.Transport
	// oauth is the handler the SDK signs requests with (nil: none); a
	// reopened event stream asks it too (http_auth.go).
	oauth auth.OAuthHandler

	// endCtx is cancelled when the teardown starts (Terminate, or the
	// generation ending itself): the probe stops.
	endCtx    context.Context
	endCancel context.CancelFunc
	endOnce   sync.Once
	// reqCtx is the parent of every request's context; cancelled once the
	// connection's Close has returned, it aborts what is still in flight.
	reqCtx    context.Context
	reqCancel context.CancelFunc
	// inflight counts requests in RoundTrip or with an unclosed body.
	inflight sync.WaitGroup
	// probing counts the probe goroutine.
	probing sync.WaitGroup
	gone    chan struct{}

	mu sync.Mutex // guards the fields below
	// conn is the SDK's connection, once the supervisor connected.
	conn mcp.Connection
	// ending: the teardown started; Connect refuses.
	ending bool
	// refuse: RoundTrip refuses new requests (closed, or ended itself).
	refuse bool
	// reason is why the generation ended itself; lastErr the last HTTP
	// failure seen while it was live. Either is Exit().Status.
	reason, lastErr string
	// cause is the first error that only a person can resolve
	// (ErrSignInRequired); it is Exit().Cause.
	cause error
	// bodies are the response bodies not yet closed.
	bodies map[*trackedBody]struct{}
	// standalone and listens count open event streams: the legacy GET
	// stream, and the 2026-07-28 subscriptions/listen responses.
	standalone, listens int
}

func newHTTPGen(h *HTTP, gen uint64, u *url.URL, headers map[string]string) *httpGen {
	g := &httpGen{
		n:      gen,
		url:    redactParsed(u),
		log:    h.logger().With("server", h.Server, "gen", gen),
		clock:  h.clock(),
		probe:  h.probeConfig(u),
		gone:   make(chan struct{}),
		bodies: make(map[*trackedBody]struct{}),
	}
	g.endCtx, g.endCancel = context.WithCancel(context.Background())
	g.reqCtx, g.reqCancel = context.WithCancel(context.Background())

	var client http.Client
	base := http.RoundTripper(nil)
	if h.HTTPClient != nil {
		client = *h.HTTPClient
		base = h.HTTPClient.Transport
	}
	if base == nil {
		if h.HTTPClient == nil {
			g.ownBase = http.DefaultTransport.(*http.Transport).Clone()
			base = g.ownBase
		} else {
			base = http.DefaultTransport
		}
	}
	rt := &genRoundTripper{g: g, base: base, headers: headers}
	client.Transport = rt
	var oauth auth.OAuthHandler
	if h.OAuth != nil {
		oauth = genAuth{g: g, h: h.OAuth}
		g.oauth = oauth
	}
	g.sdk = &mcp.StreamableClientTransport{
		Endpoint:     rt.hideSecrets(u),
		HTTPClient:   &client,
		OAuthHandler: oauth,
		// One resumption of a call's stream (SEP-1699: a server may close
		// it after a priming event and expect the client back with
		// Last-Event-ID after its retry delay). The standalone stream's
		// end never reaches the SDK: the generation reopens it, or ends
		// itself at once when that fails (keptStream); a failed
		// resumption fails the call.
		MaxRetries: 1,
	}
	return g
}

// Transport implements Generation.
func (g *httpGen) Transport() mcp.Transport { return httpTransport{g} }

// Gone implements Generation: closed once the teardown closed the
// connection (its Close returned), every request of the generation ended
// and every response body was closed.
func (g *httpGen) Gone() <-chan struct{} { return g.gone }

// Terminate implements Generation: it closes the connection (the SDK
// sends the session-ending DELETE, bounded by 5 s), then aborts whatever
// is still in flight. It does not block.
func (g *httpGen) Terminate() { g.end() }

// Abort implements Aborter as Terminate: there is no process to signal and
// no grace to skip. Closing the connection is the whole teardown, and its
// session-ending DELETE is as harmless for a session that never served.
func (g *httpGen) Abort() { g.end() }

// Exit implements Generation. Status is why the generation ended itself
// (health probe, subscription stream), else the last HTTP failure seen
// while it was live ("GET http://host/mcp: event stream ended: EOF").
func (g *httpGen) Exit() ExitInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason != "" {
		return ExitInfo{Status: g.reason, Cause: g.cause}
	}
	return ExitInfo{Status: g.lastErr, Cause: g.cause}
}

// Ending reports whether the generation's teardown started (it ended
// itself, or was told to end): the SDK's connection may then read io.EOF
// before the supervisor's generation has ended, and a request's bare EOF
// is the connection's end, not the server's answer.
func (g *httpGen) Ending() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ending || g.reason != ""
}

// Established implements SessionAware. A session that no event stream of
// the SDK watches is probed: every sessionless one (2026-07-28, whose SDK
// never reports a dead server), and a legacy session whose server offers
// no standalone stream. A legacy session with its stream open is not:
// the SDK ends it when the stream or the session is lost.
func (g *httpGen) Established(cs *mcp.ClientSession) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ending {
		return
	}
	if cs.ID() != "" && g.standalone > 0 {
		g.log.Debug("http: stateful session with an event stream: no health probe")
		return
	}
	g.log.Debug("http: health probe started", "protocol", cs.InitializeResult().ProtocolVersion,
		"stateful", cs.ID() != "", "interval", g.probe.interval)
	g.probing.Add(1)
	go g.runProbe(cs)
}

// endItself ends a generation whose server the SDK cannot see is gone:
// it records why and closes the connection, so ClientSession.Wait returns
// and the supervisor reconnects. New requests fail at once: the server is
// dead or forgot us, so even the DELETE is not worth waiting for.
func (g *httpGen) endItself(reason string) {
	g.mu.Lock()
	if g.ending || g.reason != "" {
		g.mu.Unlock()
		return
	}
	g.reason = reason
	g.refuse = true
	g.mu.Unlock()
	g.log.Debug("http: ending generation", "reason", reason)
	g.end()
}

func (g *httpGen) end() {
	g.endOnce.Do(func() {
		g.mu.Lock()
		g.ending = true
		g.mu.Unlock()
		g.endCancel()
		go g.teardown()
	})
}

// teardown closes the connection, then aborts what is left and waits for
// it. Bounded by the DELETE's 5 s as long as the base RoundTripper honours
// request contexts.
func (g *httpGen) teardown() {
	g.mu.Lock()
	conn := g.conn
	g.mu.Unlock()
	if conn != nil {
		if err := conn.Close(); err != nil {
			g.log.Debug("http: close", "err", err)
		}
	}
	g.mu.Lock()
	g.refuse = true
	bodies := make([]*trackedBody, 0, len(g.bodies))
	for b := range g.bodies {
		bodies = append(bodies, b)
	}
	g.mu.Unlock()
	g.reqCancel()
	for _, b := range bodies {
		b.Close()
	}
	g.inflight.Wait()
	g.probing.Wait()
	if g.ownBase != nil {
		g.ownBase.CloseIdleConnections()
	}
	g.log.Debug("http: generation closed")
	close(g.gone)
}

// refusal is the error of a request the closed generation refuses: it
// names why the generation ended itself, since the SDK passes the refused
// DELETE's error up as the session's end (ClientSession.Wait).
func (g *httpGen) refusal(method string) error {
	g.mu.Lock()
	reason := g.reason
	g.mu.Unlock()
	if reason != "" {
		return fmt.Errorf("http: %s %s: gen %d ended: %s", method, g.url, g.n, reason)
	}
	return fmt.Errorf("http: %s %s: gen %d is closed", method, g.url, g.n)
}

// noteFailure records an HTTP failure of the live generation.
func (g *httpGen) noteFailure(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ending {
		g.lastErr = s
	}
}

func (g *httpGen) listenOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.listens > 0
}

// httpTransport is the mcp.Transport of one generation: it keeps the
// connection the SDK's transport makes and returns it unwrapped.
type httpTransport struct{ g *httpGen }

// Connect implements mcp.Transport. It sends nothing; it refuses a
// generation that was terminated or already connected.
func (t httpTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.ending:
		return nil, fmt.Errorf("http: connect %s: gen %d was terminated", g.url, g.n)
	case g.conn != nil:
		return nil, fmt.Errorf("http: connect %s: gen %d is already connected", g.url, g.n)
	}
	c, err := g.sdk.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("http: connect %s: %w", g.url, err)
	}
	g.conn = c
	return c, nil
}
