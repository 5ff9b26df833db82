package mcpkeep

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tracing (docs/design.md §27). A host's W3C trace context travels in a
// request's _meta (SEP-414: traceparent, tracestate, baggage); the library
// carries it, unchanged, to the server on every attempt (a replay included),
// and calls the hooks of a RequestTrace, when one rides in the request's
// context, around each attempt and each wait for a server's recovery. The
// library knows no tracing SDK: a package of its own implements the hooks.

// The SEP-414 _meta keys. Only these are copied from a host's request: the
// host's io.modelcontextprotocol/* keys are the SDK's to fill.
const (
	MetaKeyTraceparent = "traceparent"
	MetaKeyTracestate  = "tracestate"
	MetaKeyBaggage     = "baggage"
)

// TraceContext is a request's W3C trace context, as its _meta carries it
// ("" for a key that is absent).
type TraceContext struct {
	Traceparent, Tracestate, Baggage string
}

// IsZero reports whether tc carries nothing.
func (tc TraceContext) IsZero() bool { return tc == TraceContext{} }

// TraceContextFromMeta reads the SEP-414 keys of a request's _meta; any
// other key, and a value that is not a string, is ignored.
func TraceContextFromMeta(m map[string]any) TraceContext {
	var tc TraceContext
	if len(m) == 0 {
		return tc
	}
	tc.Traceparent, _ = m[MetaKeyTraceparent].(string)
	tc.Tracestate, _ = m[MetaKeyTracestate].(string)
	tc.Baggage, _ = m[MetaKeyBaggage].(string)
	return tc
}

// put sets tc's keys in m (absent ones are left alone).
func (tc TraceContext) put(m map[string]any) {
	if tc.Traceparent != "" {
		m[MetaKeyTraceparent] = tc.Traceparent
	}
	if tc.Tracestate != "" {
		m[MetaKeyTracestate] = tc.Tracestate
	}
	if tc.Baggage != "" {
		m[MetaKeyBaggage] = tc.Baggage
	}
}

// appendJSON appends tc's keys as JSON object members, each preceded by a
// comma when b already ends a member (sep).
func (tc TraceContext) appendJSON(b []byte, sep bool) []byte {
	for _, kv := range [...][2]string{{MetaKeyTraceparent, tc.Traceparent}, {MetaKeyTracestate, tc.Tracestate}, {MetaKeyBaggage, tc.Baggage}} {
		if kv[1] == "" {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		b = transport.AppendJSONString(b, kv[0])
		b = append(b, ':')
		b = transport.AppendJSONString(b, kv[1])
		sep = true
	}
	return b
}

// Attempt describes one sending of a request to a server.
type Attempt struct {
	Server     string
	Generation uint64
	Method     string
	// N counts the request's attempts from 1; a replay is attempt 2.
	N int
	// ReplayOf, for a replay, is why the first attempt was lost.
	ReplayOf error
}

// RequestTrace is the tracing hooks of one request (docs/design.md §27).
// Its methods are called on the request's goroutines, one at a time.
type RequestTrace interface {
	// StartAttempt is called as the request is sent to a server. tc is
	// the trace context the server will see (the host's); the hook may
	// rewrite it, to make its own span the server's parent. end is called
	// with the attempt's outcome.
	StartAttempt(a Attempt, tc *TraceContext) (end func(error))
	// StartWait is called when the request waits for a server to
	// recover (reason: "outage" or "replay"); end when the wait is over.
	StartWait(server, reason string) (end func())
}

// WithTrace returns ctx carrying the trace context of a request and,
// when rt is not nil, its hooks: every request the library sends under
// ctx carries tc in its _meta (after rt's StartAttempt rewrote it). A zero
// tc with a nil rt returns ctx as it is.
func WithTrace(ctx context.Context, tc TraceContext, rt RequestTrace) context.Context {
	if tc.IsZero() && rt == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, &callTrace{tc: tc, rt: rt})
}

// TraceFrom carries the trace of from (if any) onto ctx: for work a
// request hands to a context of its own (a bridge's).
func TraceFrom(ctx, from context.Context) context.Context {
	if ct, ok := from.Value(traceKey{}).(*callTrace); ok {
		return context.WithValue(ctx, traceKey{}, ct)
	}
	return ctx
}

type traceKey struct{}

// callTrace is the tracing state of one request: its attempts and the
// wait in progress.
type callTrace struct {
	tc TraceContext
	rt RequestTrace

	mu       sync.Mutex
	attempts int
	replay   error  // why the next attempt is a replay
	waitEnd  func() // the wait in progress, if any
}

func traceOf(ctx context.Context) *callTrace {
	ct, _ := ctx.Value(traceKey{}).(*callTrace)
	return ct
}

// attempt starts one attempt: it ends a wait in progress, and returns the
// trace context to send and the end of the attempt (nil without hooks).
func (ct *callTrace) attempt(server string, gen uint64, method string) (TraceContext, func(error)) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	tc := ct.tc
	if ct.waitEnd != nil {
		ct.waitEnd()
		ct.waitEnd = nil
	}
	ct.attempts++
	if ct.rt == nil {
		return tc, nil
	}
	a := Attempt{Server: server, Generation: gen, Method: method, N: ct.attempts, ReplayOf: ct.replay}
	ct.replay = nil
	end := ct.rt.StartAttempt(a, &tc)
	return tc, end
}

// waiting starts a wait for recovery, unless one is in progress.
func (ct *callTrace) waiting(server, reason string) {
	if ct == nil || ct.rt == nil {
		return
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.waitEnd == nil {
		ct.waitEnd = ct.rt.StartWait(server, reason)
	}
}

// lost marks the next attempt a replay of one lost with err, and starts
// the replay's wait.
func (ct *callTrace) lost(server string, err error) {
	if ct == nil {
		return
	}
	ct.mu.Lock()
	ct.replay = err
	ct.mu.Unlock()
	ct.waiting(server, "replay")
}

// done ends a wait still in progress when the request returns.
func (ct *callTrace) done() {
	if ct == nil {
		return
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.waitEnd != nil {
		ct.waitEnd()
		ct.waitEnd = nil
	}
}

// tracedMethods are the requests that carry a caller's trace context.
var tracedMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// traceSending is the SDK client's sending middleware of generation g that
// puts a request's trace context into its _meta and calls its hooks.
func (s *Supervisor) traceSending(g *generation) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !tracedMethods[method] {
				return next(ctx, method, req)
			}
			ct := traceOf(ctx)
			if ct == nil {
				return next(ctx, method, req)
			}
			tc, end := ct.attempt(s.opts.Name, g.n, method)
			if p := req.GetParams(); p != nil && !tc.IsZero() {
				m := p.GetMeta()
				if m == nil {
					m = map[string]any{}
				}
				tc.put(m)
				p.SetMeta(m)
			}
			res, err := next(ctx, method, req)
			if end != nil {
				end(err)
			}
			return res, err
		}
	}
}

// traceWait starts the request's wait for recovery in its trace, if it has
// one (a replay's wait was started at the loss).
func (w *readyWait) traceWait(ctx context.Context, server string) {
	if w.ct == nil {
		if w.ct = traceOf(ctx); w.ct == nil {
			return
		}
	}
	w.ct.waiting(server, "outage")
}

// Tracer starts the trace of a request a front (the proxy) serves
// (docs/design.md §27). Nil traces nothing and costs nothing.
type Tracer interface {
	// StartRequest starts the request's span, a child of the host's trace
	// context tc when it has one. It returns the context to serve the
	// request under, the request's hooks, and its end (err is the
	// request's failure; a tool result with isError is ErrToolResult).
	StartRequest(ctx context.Context, r RequestInfo, tc TraceContext) (context.Context, RequestTrace, func(err error))
}

// RequestInfo describes a host's request at the front.
type RequestInfo struct {
	Method  string // the MCP method
	Name    string // the public tool or prompt name, or the resource URI's server
	Server  string // the server that serves it ("" when unknown)
	Session string // the host's session id ("" over stdio)
	Era     string // the host's protocol version
}

// ErrToolResult is what a Tracer's end gets for a tool result with isError.
var ErrToolResult = errors.New("mcpkeep: tool result is an error")
