package transport

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// The SDK's request header naming the JSON-RPC method (2026-07-28).
const mcpMethodHeader = "Mcp-Method"

// transportHeader reports whether k is one of the Streamable HTTP
// transport's own headers, which only the SDK sets: the session id, the
// protocol version and the 2026-07-28 standard headers (Mcp-Method,
// Mcp-Name, Mcp-Param-*), which must match each request's body. A
// configured header of such a name would put a name on a request whose
// body has none, or one the server refuses as a mismatch, so it is not
// sent (docs/design.md §24).
func transportHeader(k string) bool {
	k = http.CanonicalHeaderKey(k)
	switch k {
	case "Mcp-Session-Id", "Mcp-Protocol-Version", mcpMethodHeader, "Mcp-Name":
		return true
	}
	return strings.HasPrefix(k, "Mcp-Param-")
}

// genRoundTripper carries every request of one generation. It adds the
// configured headers, ties each request to the generation (so the
// teardown can abort it and prove it ended), and watches the event
// streams: the end of a subscriptions/listen stream that mcpkeep did not
// cancel means the server dropped the subscription (it restarted, or shut
// down), which the SDK does not report.
type genRoundTripper struct {
	g       *httpGen
	base    http.RoundTripper
	headers map[string]string

	// The endpoint's secrets, kept from the SDK (see hideSecrets).
	endpoint *url.URL      // the endpoint as the SDK knows it
	query    string        // the endpoint's raw query
	user     *url.Userinfo // the endpoint's userinfo
}

// hideSecrets returns the endpoint u without its userinfo, query and
// fragment, for the SDK, and keeps them for RoundTrip to put back into
// each request to that endpoint. The SDK (and net/http, whose errors
// quote the request URL) then never holds a secret of the URL, so no
// error, log or trace it produces can show one (docs/design.md §8).
func (t *genRoundTripper) hideSecrets(u *url.URL) string {
	t.endpoint = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	t.query, t.user = u.RawQuery, u.User
	return t.endpoint.String()
}

// withSecrets puts the endpoint's query and credentials into out, a
// request to the endpoint as the SDK knows it. The credentials go where
// http.Client would have put them: basic auth, unless the request has an
// Authorization header already (before the configured headers are added,
// so they still beat a configured Authorization, as before).
func (t *genRoundTripper) withSecrets(out *http.Request) {
	e, u := t.endpoint, out.URL
	if e == nil || u.Scheme != e.Scheme || u.Host != e.Host || u.EscapedPath() != e.EscapedPath() || u.RawQuery != "" {
		return // not the endpoint (the SDK asks nothing else; a redirect)
	}
	if t.query != "" {
		u.RawQuery = t.query
	}
	if t.user != nil && out.Header.Get("Authorization") == "" {
		pass, _ := t.user.Password()
		out.SetBasicAuth(t.user.Username(), pass)
	}
}

func (t *genRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	mark := probeMarkOf(req)
	if !g.admit() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, g.refusal(req.Method)
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(g.reqCtx, cancel)
	release := func() { stop(); cancel() }
	out := req.Clone(ctx)
	t.withSecrets(out)
	// Only the endpoint's origin gets the configured headers (a redirect
	// elsewhere is refused below; this holds whatever asks).
	if t.toEndpointOrigin(out.URL) {
		for k, v := range t.headers {
			if out.Header.Get(k) == "" && !transportHeader(k) {
				out.Header.Set(k, v)
			}
		}
	}
	// Failures are kept for Exit (note says how), except the DELETE's: the
	// SDK's Close sends it after a loss, and its failure would hide the
	// cause.
	fail := func(note string, err error) (*http.Response, error) {
		if ctx.Err() == nil && req.Method != http.MethodDelete {
			g.noteFailure(note)
		}
		release()
		g.inflight.Done()
		return nil, err
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		return fail(fmt.Sprintf("%s %s: %v", req.Method, g.url, err), err)
	}
	mark.saw(resp)
	if rerr := t.checkRedirect(out, resp); rerr != nil {
		resp.Body.Close()
		return fail(rerr.Error(), rerr)
	}
	// A redirect within the origin is followed by the client, through
	// RoundTrip again: it is no failure.
	followed := isFollowed(resp.StatusCode) && resp.Header.Get("Location") != ""
	if resp.StatusCode >= 300 && !followed && req.Method != http.MethodDelete && !expectedRefusal(req, resp.StatusCode) {
		g.noteFailure(fmt.Sprintf("%s %s: %s", req.Method, g.url, resp.Status))
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case followed || (ok2xx && isEventStream(resp.Header.Get("Content-Type"))):
		// Event streams are bounded per event by the SDK.
	case ok2xx && req.Method == http.MethodPost && expectsAnswer(req):
		if ok, err := readAhead(resp, req.Method, g.url); !ok {
			return fail(err.Error(), err)
		}
	default:
		limit := MaxPlainBody
		if !ok2xx {
			limit = MaxErrorBody
		}
		resp.Body = &cappedBody{rc: resp.Body, left: limit,
			err: &BodyTooLargeError{Method: req.Method, URL: g.url, Status: resp.Status, Limit: limit},
			over: func(e *BodyTooLargeError) {
				if req.Method != http.MethodDelete {
					g.noteFailure(e.Error())
				}
			}}
	}
	b := &trackedBody{rc: resp.Body, g: g, ctx: ctx, release: release,
		label: fmt.Sprintf("%s %s", req.Method, g.url)}
	if resp.StatusCode == http.StatusOK && isEventStream(resp.Header.Get("Content-Type")) {
		switch {
		case req.Method == http.MethodGet && (req.Header.Get("Last-Event-ID") == "" || isReopen(req)):
			b.kind = standaloneStream
		case req.Header.Get(mcpMethodHeader) == "subscriptions/listen":
			b.kind = listenStream
		}
	}
	g.track(b)
	resp.Body = b
	if b.kind == standaloneStream && !isReopen(req) {
		resp.Body = t.keepStream(req, b) // http_stream.go
	}
	return resp, nil
}

// expectedRefusal: refusals that are part of the protocol, not failures:
// 405 to the optional standalone GET, and a legacy server rejecting the
// 2026-07-28 server/discover (the SDK then falls back to initialize).
func expectedRefusal(req *http.Request, status int) bool {
	return (req.Method == http.MethodGet && status == http.StatusMethodNotAllowed) ||
		(status >= 400 && status < 500 && req.Header.Get(mcpMethodHeader) == "server/discover")
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// admit counts a new request in, unless the generation refuses them.
// Under the lock, so no request is added once the teardown waits.
func (g *httpGen) admit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refuse {
		return false
	}
	g.inflight.Add(1)
	return true
}

func (g *httpGen) track(b *trackedBody) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bodies[b] = struct{}{}
	switch b.kind {
	case standaloneStream:
		g.standalone++
	case listenStream:
		g.listens++
	}
}

type bodyKind int

const (
	plainBody bodyKind = iota
	standaloneStream
	listenStream
)

// trackedBody is a response body of the generation.
type trackedBody struct {
	rc      io.ReadCloser
	g       *httpGen
	kind    bodyKind
	ctx     context.Context // the request's: done when the client gave it up
	release func()
	label   string // method and redacted URL

	endOnce   sync.Once // the stream's end is judged once
	closeOnce sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.ended(err)
	}
	return n, err
}

// Close is idempotent; the teardown may close a body the SDK still reads.
func (b *trackedBody) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.ended(nil)
		err = b.rc.Close()
		b.release()
		g := b.g
		g.mu.Lock()
		delete(g.bodies, b)
		g.mu.Unlock()
		g.inflight.Done()
	})
	return err
}

// ended judges the end of an event stream, once: by the server (a read
// error or EOF while the request was still wanted) or by mcpkeep (Close
// first, or the request's context done).
func (b *trackedBody) ended(readErr error) {
	b.endOnce.Do(func() {
		g := b.g
		g.mu.Lock()
		switch b.kind {
		case standaloneStream:
			g.standalone--
		case listenStream:
			g.listens--
		}
		g.mu.Unlock()
		if readErr == nil || b.kind == plainBody || b.ctx.Err() != nil {
			return
		}
		if b.kind == standaloneStream {
			return // the legacy session's own stream: keptStream judges its end
		}
		what := fmt.Sprintf("%s: event stream ended: %v", b.label, readErr)
		g.endItself("subscriptions/listen " + what + " (the server dropped the subscription)")
	})
}
