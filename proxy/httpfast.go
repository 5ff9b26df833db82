package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The fast path over HTTP (docs/design.md §24). The SDK's stateless
// handler builds a server session for every 2026-07-28 request and
// decodes the request about ten times on the way (each decode a fresh
// 32 KiB buffer): most of what the front cost per call. httpFast takes a
// plain tools/call before it and relays it with Pool.CallRaw, answering
// with one JSON response (the transport lets a server answer a POST with
// application/json instead of a stream). It frames the envelope only:
// whatever the SDK's server would decide goes to it, untouched.
//
//   - Only a request the SDK would serve as it is: a POST whose
//     Content-Type, Accept and Mcp-Protocol-Version (2026-07-28) the SDK
//     takes, Mcp-Method "tools/call" and Mcp-Name the body's name, a body
//     within the SDK's limit (less room for a hand-back's key), no
//     Last-Event-ID, a loopback listener's Host loopback (the SDK's DNS
//     rebinding check), params of no more than a name, arguments and
//     _meta, the _meta's protocol version "2026-07-28" and client info
//     and capabilities the SDK's types decode, no log level, no progress
//     token (its notifications need the stream), no tasks opt-in, a tool
//     that is exposed, not "required" by the tasks policy and without
//     x-mcp-header parameters (the SDK checks Mcp-Param-* against those).
//     Anything else goes to the SDK's handler with its body intact.
//   - The answer is the stdio fast path's (fast.go): the server's plain
//     result or its JSON-RPC error as they came; any other outcome goes
//     to the SDK's handler marked with a one-time key, and the tool
//     handler answers it with the outcome.
//   - A server's request during the call (sampling, elicitation, roots)
//     reaches the call's bridge as on the typed path (route sees the
//     request's declared capabilities until a session adopts the bridge);
//     it, or the host going away, hands the call in flight to the SDK's
//     handler, whose session adopts the bridge and runs the first round
//     there (tools.go).

// httpFastBodyRoom is kept free under the SDK's body limit for the
// _meta key a hand-back adds.
const httpFastBodyRoom = 1 << 10

// httpFast serves what the fast path takes; next (the SDK's stateless
// handler) everything else.
func (s *Server) httpFast(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fc, ok := s.httpFastCall(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		s.serveFastHTTP(w, r, next, fc)
	})
}

// httpCall is one request the fast path takes.
type httpCall struct {
	req    *jsonrpc.Request
	public string
	server string
	args   json.RawMessage
	caps   *mcp.ClientCapabilities
	trace  *mcpkeep.TraceContext
}

// httpFastCall decides whether the fast path takes r. It may read r's
// body; r.Body then yields the same bytes.
func (s *Server) httpFastCall(r *http.Request) (httpCall, bool) {
	h := r.Header
	if r.Method != http.MethodPost || s.opts.TypedRelay || s.getPool() == nil ||
		h.Get("Mcp-Method") != "tools/call" || h.Get(protocolVersionHeader) != modernVersion ||
		len(h.Values("Last-Event-ID")) > 0 || !jsonContent(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) ||
		(localRequest(r) && !loopbackHost(r.Host)) || r.Body == nil {
		return httpCall{}, false
	}
	limit := mcp.DefaultMaxRequestBodyBytes - httpFastBodyRoom
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > limit {
		return httpCall{}, false
	}
	msg, err := transport.DecodeEnvelope(body)
	if err != nil {
		return httpCall{}, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		return httpCall{}, false
	}
	p, ok := parseParams(req.Params)
	if !ok {
		return httpCall{}, false
	}
	if h.Get("Mcp-Name") != p.Name {
		return httpCall{}, false // the SDK's 400 and -32020
	}
	meta, ok := parseMeta(p.Meta)
	if !ok || string(meta.ProtocolVersion) != `"`+modernVersion+`"` || len(meta.LogLevel) > 0 || len(meta.ProgressToken) > 0 {
		return httpCall{}, false
	}
	caps, ok := s.hostMetas.capabilities(meta.ClientInfo, meta.ClientCapabilities)
	if !ok {
		return httpCall{}, false
	}
	if s.tasks.wanted(&mcp.InitializeParams{Capabilities: caps}, meta.ClientCapabilities) || s.tasks.required(p.Name) {
		return httpCall{}, false // a task, or -32021 (tasks.go)
	}
	tool, server, ok := s.up.exposedTool(p.Name)
	if !ok || bytes.Contains(tool.InputSchema, []byte("x-mcp-header")) || s.up.twins.mayServe(server) {
		return httpCall{}, false // a twin's call is the typed path's (twin.go)
	}
	if sup, ok := s.getPool().Supervisor(server); ok {
		if info := sup.ServerInfo(); info != nil && info.ProtocolVersion < modernVersion {
			// A legacy server's result lacks what the SDK adds for a
			// 2026-07-28 host (its result type, server info): the fast
			// path would hand every one back.
			return httpCall{}, false
		}
	}
	fc := httpCall{req: req, public: p.Name, server: server, args: p.Arguments, caps: caps}
	if meta.Traceparent != "" || meta.Tracestate != "" || meta.Baggage != "" {
		fc.trace = &mcpkeep.TraceContext{Traceparent: meta.Traceparent, Tracestate: meta.Tracestate, Baggage: meta.Baggage}
	}
	return fc, true
}

// serveFastHTTP relays fc and answers it. The server's call runs on a
// goroutine of its own: a server's request during it, or the host going
// away, hands the request to the SDK's handler while the call goes on.
func (s *Server) serveFastHTTP(w http.ResponseWriter, r *http.Request, next http.Handler, fc httpCall) {
	u := s.up
	bs := &u.host.bridges
	s.fast.served.Add(1)
	ctx, endTrace := s.traceFast(r.Context(), fc.public, nil, fc.trace) // docs/design.md §27
	b := bs.openFast(fc.server, fc.public, nil)
	b.setRound(ctx, nil, nil, "")
	lateCh := make(chan struct{}, 1)
	late := func() { lateCh <- struct{}{} }
	b.late.Store(&late)
	stop := context.AfterFunc(ctx, b.goLate) // the host went
	// The server is told the host's capabilities of this request, as on
	// the typed path (hostcaps.go).
	cctx := withCarrier(mcpkeep.WithHostCapabilities(mcpkeep.TraceFrom(b.ctx, ctx), fc.caps), via{bridge: b, caps: fc.caps})
	done := make(chan outcome, 1)
	s.calls.add(1)
	go func() {
		defer s.calls.add(-1)
		start := time.Now()
		raw, err := u.pool().CallRaw(cctx, fc.public, fc.args, nil)
		u.observe(fc.server, "tools/call", start, err)
		out := outcome{raw: raw, err: err}
		if b.late.Swap(nil) == nil {
			b.done <- out // the round went its way: the adopting session takes it
			return
		}
		done <- out
	}()
	select {
	case out := <-done:
		stop()
		bs.close(b)
		endTrace(out.raw, out.err)
		s.answerHTTP(w, r, next, fc, out)
	case <-lateCh:
		stop()
		// The span goes on with the call: the adopting handler ends it
		// with the round (tools.go: adopt).
		s.handBackHTTP(w, r, next, fc, handoff{bridge: b, endTrace: endTrace})
	}
}

// answerHTTP writes the host's answer as the stdio fast path does
// (fastConn.answer): a plain result or the server's JSON-RPC error as
// they came, anything else through the SDK's handler.
func (s *Server) answerHTTP(w http.ResponseWriter, r *http.Request, next http.Handler, fc httpCall, out outcome) {
	var wire *jsonrpc.Error
	switch {
	case out.err == nil && out.res == nil && plainResult(out.raw, true):
		writeJSONResponse(w, &jsonrpc.Response{ID: fc.req.ID, Result: out.raw})
	case out.err != nil && errors.As(out.err, &wire):
		if st := errorStatus(wire.Code); st != 0 {
			// A protocol-level error on 2026-07-28 has its HTTP status,
			// as the SDK's handler gives it (errorStatus).
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
		}
		writeJSONResponse(w, &jsonrpc.Response{ID: fc.req.ID, Error: wire})
	default:
		res, err := out.res, out.err
		if res == nil && err == nil {
			if err = unaskedRaw(fc.server, fc.public, out.raw); err == nil { // tasks_relay_unasked.go
				res, err = out.typed()
			}
		}
		res, err = s.up.result(res, err)
		s.handBackHTTP(w, r, next, fc, handoff{res: res, err: err})
	}
}

// errorStatus is the HTTP status of a 2026-07-28 JSON-RPC error response
// (SEP-2575, as go-sdk v1.8.0's stateless handler sets it): 404 for
// -32601, 400 for -32602, -32021 and -32022, else 0 (200).
func errorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return 0
}

// writeJSONResponse answers the POST with one JSON-RPC response.
func writeJSONResponse(w http.ResponseWriter, resp *jsonrpc.Response) {
	data, err := transport.AppendEnvelope(nil, resp)
	if err != nil {
		// Not reached: the id and the raw result came from the parser.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	_, _ = w.Write(data)
}

// handBackHTTP serves the host's request through the SDK's handler with
// h to answer it with: the request's _meta carries h's one-time key.
func (s *Server) handBackHTTP(w http.ResponseWriter, r *http.Request, next http.Handler, fc httpCall, h handoff) {
	var key [16]byte
	_, _ = rand.Read(key[:])
	k := hex.EncodeToString(key[:])
	params, err := withMetaKey(fc.req.Params, handoffKey, k)
	var body []byte
	if err == nil {
		body, err = transport.AppendEnvelope(nil, &jsonrpc.Request{ID: fc.req.ID, Method: fc.req.Method, Params: params})
	}
	if err != nil {
		// Not reached: the params parsed before.
		writeJSONResponse(w, &jsonrpc.Response{ID: fc.req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
		return
	}
	s.up.handoffs.put(k, h)
	s.fast.handedBack.Add(1)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	next.ServeHTTP(w, r)
	// The SDK answered without the handler (the host went first): the
	// outcome is dropped, and a call in flight ends with its bridge.
	if h, ok := s.up.handoffs.drop(k); ok && h.bridge != nil {
		if h.endTrace != nil {
			h.endTrace(nil, context.Canceled) // the host went before its answer
		}
		s.up.host.bridges.close(h.bridge)
	}
}

// mayServe reports whether a 2026-07-28 host's call of server may go to
// its twin (twin.go): the HTTP fast path leaves such a call to the typed
// path, which decides.
func (t *twins) mayServe(server string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.eligibleLocked(server)
	return ok && t.mu.pool != nil
}

// jsonContent: the SDK's Content-Type check.
func jsonContent(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// acceptsBoth: the SDK's Accept check (both JSON and an event stream).
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// hostMetas are the 2026-07-28 client info and capabilities the fast
// path has decoded, by their bytes: a host sends the same ones with every
// request, and decoding them costs more than the relay's own work.
type hostMetas struct {
	mu sync.Mutex
	m  map[string]*mcp.ClientCapabilities
}

// maxHostMetas bounds hostMetas (a full table starts over).
const maxHostMetas = 256

// capabilities decodes a request's client info and capabilities as the
// SDK's server does (into its types, keys matched case-sensitively):
// the capabilities, or false where the SDK would refuse them (capabilities
// missing or not an object, client info present and not one) or the
// fast path is not sure it would not.
func (hm *hostMetas) capabilities(info, caps json.RawMessage) (*mcp.ClientCapabilities, bool) {
	key := string(info) + "\x00" + string(caps)
	hm.mu.Lock()
	c, ok := hm.m[key]
	hm.mu.Unlock()
	if ok {
		return c, true
	}
	if (len(info) > 0 && first(info) != '{') || first(caps) != '{' {
		return nil, false
	}
	const flags = segjson.DontMatchCaseInsensitiveStructFields
	if len(info) > 0 {
		var impl mcp.Implementation
		if _, err := segjson.Parse(info, &impl, flags); err != nil {
			return nil, false
		}
	}
	var v2 struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	if _, err := segjson.Parse(caps, &v2, flags); err != nil {
		return nil, false
	}
	c = &v2.ClientCapabilities
	if c.RootsV2 = v2.Roots; c.RootsV2 != nil {
		c.Roots = *c.RootsV2
	}
	hm.mu.Lock()
	if hm.m == nil || len(hm.m) >= maxHostMetas {
		hm.m = map[string]*mcp.ClientCapabilities{}
	}
	hm.m[key] = c
	hm.mu.Unlock()
	return c, true
}
