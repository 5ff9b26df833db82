package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The fast path (docs/design.md §24). A host's tools/call through the
// proxy's own SDK server costs a decode of its params and its _meta, the
// typed call to the server, a decode of the server's result into the
// SDK's types and an encode of it again: most of the hop. On a
// connection Serve runs (stdio), fastConn takes a plain tools/call out of
// the stream before the SDK's server reads it and relays it with
// Pool.CallRaw: the result goes back to the host as the server sent it.
// Whatever the SDK's server would have done differently goes to it
// instead, untouched, so the fast path is the typed path minus its
// decoding:
//
//   - Only a request the SDK would serve as it is: the session
//     initialized, a tools/call of an exposed tool with no more than a
//     name, arguments and _meta (a progress token; on 2026-07-28 the
//     _meta fields of an earlier request the SDK served, byte for byte,
//     and no log level of its own). Anything else reads on to the SDK.
//   - An answer the SDK would have sent as it came: a result with its
//     content, and on 2026-07-28 its result type and server info, or the
//     server's JSON-RPC error. Any other outcome (the connection's end
//     worded for the model, an input request for a 2026-07-28 host, a
//     result the SDK would have completed) is handed back: the host's
//     request goes on to the SDK's server marked with a one-time key, and
//     the handler answers it with the outcome instead of calling again.
//
// Server requests during the call, progress, cancellation, outboxes and
// the counting of requests in flight are the typed path's.

// fastConn is the host's connection on Serve's transport.
type fastConn struct {
	mcp.Connection
	s *Server

	session atomic.Pointer[mcp.ServerSession] // the host's, once Connect returned
	ctx     context.Context                   // ends the fast calls when the connection closes
	cancel  context.CancelFunc
	work    chan fastJob   // taken by an idle worker
	wg      sync.WaitGroup // the workers

	writeMu sync.Mutex // one writer at a time: the SDK's and the fast calls'

	mu      sync.Mutex
	queue   []jsonrpc.Message // handed back to the SDK, read next
	parent  context.Context   // the SDK reader's context
	readCtx context.Context   // parent, cancelled by a hand-back to wake the reader
	wake    context.CancelFunc
	calls   map[jsonrpc.ID]context.CancelFunc // fast calls in flight, by the host's id
	metas   map[jsonrpc.ID]metaTriple         // 2026-07-28 _meta fields of requests the SDK serves
	served  *metaTriple                       // ... of one it answered without an error
}

// fastTransport makes Serve's connection a fastConn.
type fastTransport struct {
	mcp.Transport
	s    *Server
	conn *fastConn
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	fc := &fastConn{Connection: c, s: t.s, calls: map[jsonrpc.ID]context.CancelFunc{},
		metas: map[jsonrpc.ID]metaTriple{}, work: make(chan fastJob)}
	fc.ctx, fc.cancel = context.WithCancel(t.s.ctx)
	if d, ok := c.(transport.Diverter); ok {
		d.Divert(fc.divert)
	}
	t.conn = fc
	return fc, nil
}

// divert takes a call the fast path serves off the host's stream on the
// goroutine that read it, which then relays it (transport.Diverter): no
// hand-over to the SDK's reader and on to a worker before the call goes
// out (docs/design.md §24). What it leaves reads on to Read as before.
func (c *fastConn) divert(m jsonrpc.Message) func() {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		return nil
	}
	j, ok := c.prepare(req)
	if !ok {
		return nil
	}
	// Counted as a worker is, for Serve to wait for; none once Serve
	// ended the connection (stop).
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		c.end(j.fr)
		return nil
	}
	c.wg.Add(1)
	c.mu.Unlock()
	return func() {
		defer c.wg.Done()
		c.call(j.ctx, j.fr)
	}
}

// stop ends the fast calls; none is counted after it (divert).
func (c *fastConn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel()
}

// maxMetas bounds the _meta fields kept for requests the SDK serves.
const maxMetas = 64

// Read hands the SDK its next message, after taking out the calls the
// fast path serves.
func (c *fastConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		rctx, m := c.next(ctx)
		if m != nil {
			return m, nil
		}
		m, err := c.Connection.Read(rctx)
		if err != nil {
			if ctx.Err() == nil && rctx.Err() != nil {
				continue // woken by a hand-back
			}
			return nil, err
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			return m, nil
		}
		switch {
		case req.Method == "tools/call" && req.IsCall() && c.serve(req):
			continue
		case req.Method == "notifications/cancelled":
			c.cancelCall(req.Params)
		}
		if req.IsCall() {
			c.noteMeta(req)
		}
		return m, nil
	}
}

// next returns a handed-back message, or the context to read with.
func (c *fastConn) next(ctx context.Context) (context.Context, jsonrpc.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return nil, m
	}
	if c.parent != ctx || c.readCtx == nil || c.readCtx.Err() != nil {
		if c.wake != nil {
			c.wake()
		}
		c.parent = ctx
		c.readCtx, c.wake = context.WithCancel(ctx)
	}
	return c.readCtx, nil
}

// handBack queues m for the SDK and wakes its reader.
func (c *fastConn) handBack(m jsonrpc.Message) {
	c.mu.Lock()
	c.queue = append(c.queue, m)
	wake := c.wake
	c.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Write serializes the SDK's writes with the fast calls', and learns which
// 2026-07-28 _meta fields the SDK served.
func (c *fastConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok {
		c.noteServed(r)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.Connection.Write(ctx, m)
}

// Close ends the fast calls, then the connection.
func (c *fastConn) Close() error {
	c.cancel()
	c.s.up.handoffs.dropAll(c)
	c.mu.Lock()
	if c.wake != nil {
		c.wake()
	}
	c.mu.Unlock()
	return c.Connection.Close()
}

// fastMeta is what the fast path reads of a request's _meta (any other
// key is dropped, as on the typed path).
type fastMeta struct {
	ProgressToken      json.RawMessage `json:"progressToken"`
	ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	LogLevel           json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	// The host's trace context, passed on (docs/design.md §27).
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
	Baggage     string `json:"baggage"`
}

// parseMeta reads raw, a request's _meta (absent: the zero fastMeta).
func parseMeta(raw json.RawMessage) (fastMeta, bool) {
	var m fastMeta
	if len(raw) == 0 || string(raw) == "null" {
		return m, true
	}
	_, err := segjson.Parse(raw, &m, segjson.DontMatchCaseInsensitiveStructFields|segjson.DontCopyRawMessage)
	return m, err == nil
}

// paramsMeta reads the _meta of a request's params.
func paramsMeta(params json.RawMessage) (fastMeta, bool) {
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if _, err := segjson.Parse(params, &p, segjson.DontMatchCaseInsensitiveStructFields|segjson.DontCopyRawMessage); err != nil {
		return fastMeta{}, false
	}
	return parseMeta(p.Meta)
}

// metaTriple is a request's 2026-07-28 _meta fields, as sent ("" for
// one that is absent: a present value is never empty text).
type metaTriple struct{ version, info, caps string }

// triple is m's protocol fields; false without a protocol version.
func (m *fastMeta) triple() (metaTriple, bool) {
	t := metaTriple{string(m.ProtocolVersion), string(m.ClientInfo), string(m.ClientCapabilities)}
	return t, t.version != ""
}

// is reports whether m's protocol fields are t, byte for byte (without
// making strings of them: this runs per call).
func (m *fastMeta) is(t *metaTriple) bool {
	return string(m.ProtocolVersion) == t.version && string(m.ClientInfo) == t.info && string(m.ClientCapabilities) == t.caps
}

// noteMeta keeps the _meta fields of a request the SDK serves.
func (c *fastConn) noteMeta(req *jsonrpc.Request) {
	if !bytes.Contains(req.Params, []byte(mcp.MetaKeyProtocolVersion)) {
		return
	}
	m, ok := paramsMeta(req.Params)
	if !ok {
		return
	}
	if t, ok := m.triple(); ok {
		c.mu.Lock()
		if len(c.metas) < maxMetas {
			c.metas[req.ID] = t
		}
		c.mu.Unlock()
	}
}

// noteServed: an answer without an error proves the SDK accepted its
// request's _meta fields.
func (c *fastConn) noteServed(r *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.metas[r.ID]; ok {
		delete(c.metas, r.ID)
		if r.Error == nil {
			c.served = &t
		}
	}
}

// fastParams is all a tools/call the fast path serves may carry.
type fastParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// parseParams reads a tools/call's params, refusing any key the fast
// path does not relay.
func parseParams(raw json.RawMessage) (fastParams, bool) {
	var p fastParams
	_, err := segjson.Parse(raw, &p, segjson.DontMatchCaseInsensitiveStructFields|segjson.DisallowUnknownFields|segjson.DontCopyRawMessage)
	return p, err == nil
}

// fastReq is one host call the fast path serves.
type fastReq struct {
	req    *jsonrpc.Request
	ss     *mcp.ServerSession
	public string
	server string
	args   json.RawMessage
	token  any // the host's progress token, or nil
	modern bool
	trace  *mcpkeep.TraceContext // the host's, or nil (docs/design.md §27; a pointer keeps fastReq small enough for the go statement in call to copy)
}

// serve starts serving req on the fast path, or says it is the SDK's.
func (c *fastConn) serve(req *jsonrpc.Request) bool {
	j, ok := c.prepare(req)
	if ok {
		c.dispatch(j)
	}
	return ok
}

// prepare makes req a fast call, or says it is the SDK's.
func (c *fastConn) prepare(req *jsonrpc.Request) (fastJob, bool) {
	ss := c.session.Load()
	if ss == nil || c.s.opts.TypedRelay {
		return fastJob{}, false
	}
	ip := ss.InitializeParams()
	if ip == nil || c.s.getPool() == nil {
		return fastJob{}, false
	}
	p, ok := parseParams(req.Params)
	if !ok {
		return fastJob{}, false
	}
	meta, ok := parseMeta(p.Meta)
	if !ok {
		return fastJob{}, false
	}
	if c.s.tasks.wanted(ip, meta.ClientCapabilities) {
		return fastJob{}, false // a task, not a relayed call (tasks.go)
	}
	if c.s.tasks.required(p.Name) {
		return fastJob{}, false // a task or -32021, not a relayed call (tasks.go)
	}
	fr := fastReq{req: req, ss: ss, public: p.Name, args: p.Arguments, modern: ip.ProtocolVersion >= modernVersion}
	if meta.Traceparent != "" || meta.Tracestate != "" || meta.Baggage != "" {
		fr.trace = &mcpkeep.TraceContext{Traceparent: meta.Traceparent, Tracestate: meta.Tracestate, Baggage: meta.Baggage}
	}
	if fr.modern {
		c.mu.Lock()
		same := c.served != nil && meta.is(c.served)
		c.mu.Unlock()
		if !same || len(meta.LogLevel) > 0 {
			return fastJob{}, false
		}
	} else if len(meta.ProtocolVersion) > 0 {
		return fastJob{}, false
	}
	if raw := meta.ProgressToken; len(raw) > 0 {
		var tok any
		if err := json.Unmarshal(raw, &tok); err != nil {
			return fastJob{}, false
		}
		switch tok.(type) {
		case string, float64:
			fr.token = tok
		default:
			return fastJob{}, false
		}
	}
	server, ok := c.s.up.exposedBy(p.Name)
	if !ok {
		return fastJob{}, false
	}
	fr.server = server
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	if _, dup := c.calls[req.ID]; dup {
		c.mu.Unlock()
		cancel()
		return fastJob{}, false
	}
	c.calls[req.ID] = cancel
	c.mu.Unlock()
	c.s.fast.served.Add(1)
	return fastJob{ctx, fr}, true
}

// modernVersion is the first protocol version of the stateless era.
const modernVersion = "2026-07-28"

// cancelCall cancels the fast call a host's notifications/cancelled names.
func (c *fastConn) cancelCall(params json.RawMessage) {
	var p struct {
		ID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.ID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// fastJob is one host call for a worker.
type fastJob struct {
	ctx context.Context
	fr  fastReq
}

// workerIdle is how long a worker waits for its next call before it
// ends: a host's calls reuse a goroutine and the stack it grew, rather
// than each growing a new one.
const workerIdle = 5 * time.Second

// dispatch hands j to an idle worker, or to a new one.
func (c *fastConn) dispatch(j fastJob) {
	select {
	case c.work <- j:
	default:
		c.wg.Add(1)
		go c.worker(j)
	}
}

func (c *fastConn) worker(j fastJob) {
	defer c.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		c.call(j.ctx, j.fr)
		idle.Reset(workerIdle)
		select {
		case j = <-c.work:
		case <-idle.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// call relays one host call and answers it.
func (c *fastConn) call(ctx context.Context, fr fastReq) {
	u := c.s.up
	pool := u.pool()
	relay := u.host.progressTo(ctx, fr.ss, fr.token)
	ctx, endTrace := c.s.traceFast(ctx, fr.public, fr.ss, fr.trace) // docs/design.md §27
	if fr.modern {
		c.callModern(ctx, fr, relay, endTrace)
		return
	}
	defer c.end(fr)
	// Counted in flight for Shutdown; ctx already ends with the
	// proxy's (the connection's is derived from it), so no context
	// of track's is needed.
	c.s.calls.add(1)
	defer c.s.calls.add(-1)
	cctx := withCarrier(ctx, via{session: fr.ss})
	var opts *mcpkeep.CallOptions
	if relay != nil {
		opts = &mcpkeep.CallOptions{Progress: relay}
	}
	start := time.Now()
	raw, err := pool.CallRaw(cctx, fr.public, fr.args, opts)
	u.observe(fr.server, "tools/call", start, err)
	u.host.flush(cctx, fr.ss)
	endTrace(raw, err)
	c.answer(fr, outcome{raw: raw, err: err})
}

// end forgets a fast call that was answered (or handed back).
func (c *fastConn) end(fr fastReq) {
	c.mu.Lock()
	cancel := c.calls[fr.req.ID]
	delete(c.calls, fr.req.ID)
	c.mu.Unlock()
	cancel()
}

// callModern relays a 2026-07-28 host's call. Its server call runs on
// the bridge's context (it may outlive the host's first round: an input
// request), but on this goroutine: most calls end with their result, and
// a goroutine of its own per call, and the hand-over of its result, were
// a third of the hop (docs/design.md §24). Only when the server asks the
// host for input, or the host cancels, does the first round go its way
// (bridges.round) on a goroutine of its own: the bridge's late hook.
func (c *fastConn) callModern(ctx context.Context, fr fastReq, relay func(*mcp.ProgressNotificationParams), endTrace func(json.RawMessage, error)) {
	u := c.s.up
	bs := &u.host.bridges
	b := bs.openFast(fr.server, fr.public, fr.ss)
	b.setRound(ctx, fr.ss, relay, "")
	opts := &mcpkeep.CallOptions{}
	if relay != nil {
		opts.Progress = b.relay
	}
	finish := func(out outcome, final bool) {
		u.host.flush(ctx, fr.ss)
		endTrace(out.raw, out.err)
		if !final {
			c.handOff(fr, out)
			return
		}
		c.answer(fr, out)
	}
	late := func() {
		go func() {
			defer c.end(fr)
			finish(bs.round(ctx, b))
		}()
	}
	b.late.Store(&late)
	stop := context.AfterFunc(ctx, b.goLate)                           // the host cancelled, or went
	cctx := withCarrier(mcpkeep.TraceFrom(b.ctx, ctx), via{bridge: b}) // b.ctx ends with the proxy's
	c.s.calls.add(1)
	start := time.Now()
	raw, err := u.pool().CallRaw(cctx, fr.public, fr.args, opts)
	u.observe(fr.server, "tools/call", start, err)
	c.s.calls.add(-1)
	out := outcome{raw: raw, err: err}
	if b.late.Swap(nil) == nil {
		b.done <- out // the round went its way: a round takes it
		return
	}
	stop()
	bs.close(b)
	defer c.end(fr)
	finish(out, true)
}

// answer writes the host's answer: the server's result or JSON-RPC error
// as they came where the SDK would have sent the same; anything else
// through the SDK (handOff).
func (c *fastConn) answer(fr fastReq, out outcome) {
	var wire *jsonrpc.Error
	switch {
	case out.err == nil && out.res == nil && plainResult(out.raw, fr.modern):
		c.write(&jsonrpc.Response{ID: fr.req.ID, Result: out.raw})
	case out.err != nil && errors.As(out.err, &wire):
		c.write(&jsonrpc.Response{ID: fr.req.ID, Error: wire})
	default:
		if out.err == nil && out.res == nil {
			if err := unaskedRaw(fr.server, fr.public, out.raw); err != nil {
				out = outcome{err: err} // a task not asked for (tasks_relay_unasked.go)
			}
		}
		c.handOff(fr, out)
	}
}

// write sends a response unless the connection closed (the host is gone).
func (c *fastConn) write(r *jsonrpc.Response) {
	if c.ctx.Err() != nil {
		return
	}
	_ = c.Write(context.WithoutCancel(c.ctx), r)
}

// handoffKey is the _meta key of a request handed back to the SDK.
const handoffKey = "io.mcpkeep/handoff"

// handOff gives the host's request to the SDK's server with the outcome
// to answer it with (see handoffs).
func (c *fastConn) handOff(fr fastReq, out outcome) {
	res, err := out.res, out.err
	if res == nil && err == nil {
		res, err = out.typed()
	}
	res, err = c.s.up.result(res, err)
	var key [16]byte
	_, _ = rand.Read(key[:])
	k := hex.EncodeToString(key[:])
	params, perr := withMetaKey(fr.req.Params, handoffKey, k)
	if perr != nil {
		// Not reached: the params parsed before. Answer as the SDK's
		// handler would have failed.
		c.write(&jsonrpc.Response{ID: fr.req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: perr.Error()}})
		return
	}
	if !c.s.up.handoffs.put(k, handoff{res: res, err: err, conn: c}) {
		return // the host is gone: nobody would read it
	}
	c.s.fast.handedBack.Add(1)
	c.handBack(&jsonrpc.Request{ID: fr.req.ID, Method: fr.req.Method, Params: params})
}

// withMetaKey is params with _meta[key] = value.
func withMetaKey(params json.RawMessage, key, value string) (json.RawMessage, error) {
	return editMeta(params, func(meta map[string]json.RawMessage) {
		v, _ := json.Marshal(value)
		meta[key] = v
	})
}

// editMeta returns the JSON object obj (null: an empty one) with its
// _meta object (made when absent or null) changed by edit; every other
// member and every other _meta value stays as it was written.
func editMeta(obj json.RawMessage, edit func(meta map[string]json.RawMessage)) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(obj, &p); err != nil {
		return nil, err
	}
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	edit(meta)
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	p["_meta"] = m
	return json.Marshal(p)
}

// handoffs are the outcomes of fast calls handed back to the SDK, by
// one-time key.
type handoffs struct {
	mu sync.Mutex
	m  map[string]handoff
}

type handoff struct {
	res  *mcp.CallToolResult
	err  error
	conn *fastConn // whose close drops it, if the SDK never read it; nil over HTTP (dropped when its request ends)
	// bridge, when set, is an HTTP fast call still in flight: the
	// handler's session adopts it and runs its first round (httpfast.go).
	bridge *bridge
	// endTrace, with bridge, ends the call's request span when the
	// adopted round ends (docs/design.md §27); nil: nothing traces it.
	endTrace func(json.RawMessage, error)
}

// put records v, unless its connection closed: a call that outlived its
// host (cancelled by the close) ends after Close dropped the connection's
// hand-offs, and its entry would stay for good. Close cancels the
// connection before dropAll takes mu, so under mu either the close is
// seen here or dropAll comes after and drops v.
func (h *handoffs) put(k string, v handoff) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v.conn != nil && v.conn.ctx.Err() != nil {
		return false
	}
	if h.m == nil {
		h.m = map[string]handoff{}
	}
	h.m[k] = v
	return true
}

// dropAll forgets the hand-backs of a connection that closed.
func (h *handoffs) dropAll(c *fastConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, v := range h.m {
		if v.conn == c {
			delete(h.m, k)
		}
	}
}

// drop forgets k's outcome and returns it, if nobody took it.
func (h *handoffs) drop(k string) (handoff, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[k]
	delete(h.m, k)
	return v, ok
}

// take returns, once, the outcome a handed-back request carries the key
// of.
func (h *handoffs) take(meta mcp.Meta) (handoff, bool) {
	k, ok := meta[handoffKey].(string)
	if !ok {
		return handoff{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[k]
	delete(h.m, k)
	return v, ok
}
