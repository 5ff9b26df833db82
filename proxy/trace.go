package proxy

import (
	"context"
	"encoding/json"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tracing at the front (docs/design.md §27): a host's trace context in a
// request's _meta (traceparent, tracestate, baggage; never the host's
// io.modelcontextprotocol/* keys) rides in the request's context to the
// library, which sends it on to the server; with Options.Tracer set, the
// request gets its own span, whose attempts become the server's parents.

// tracedFront are the requests whose trace context reaches a server.
var tracedFront = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// noEnd is the end of a request nothing traces.
func noEnd(mcp.Result, error) {}

// traceRequest starts a typed request's trace: ctx to serve it under and
// its end.
func (s *Server) traceRequest(ctx context.Context, method string, req mcp.Request) (context.Context, func(mcp.Result, error)) {
	if !tracedFront[method] {
		return ctx, noEnd
	}
	var tc mcpkeep.TraceContext
	var name string
	if p := req.GetParams(); p != nil {
		m := p.GetMeta()
		if _, ok := m[handoffKey]; ok {
			return ctx, noEnd // the fast path's, which traced it
		}
		tc = mcpkeep.TraceContextFromMeta(m)
		switch p := p.(type) {
		case *mcp.CallToolParamsRaw:
			name = p.Name
		case *mcp.CallToolParams:
			name = p.Name
		case *mcp.GetPromptParams:
			name = p.Name
		}
	}
	if s.opts.Tracer == nil {
		return mcpkeep.WithTrace(ctx, tc, nil), noEnd
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	ctx, end := s.startTrace(ctx, method, name, ss, tc)
	return ctx, func(res mcp.Result, err error) {
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r != nil && r.IsError {
			err = mcpkeep.ErrToolResult
		}
		end(err)
	}
}

// startTrace starts the span of a host's request through Options.Tracer.
func (s *Server) startTrace(ctx context.Context, method, name string, ss *mcp.ServerSession, tc mcpkeep.TraceContext) (context.Context, func(error)) {
	info := mcpkeep.RequestInfo{Method: method, Name: name}
	if name != "" && method != "resources/read" && s.getPool() != nil {
		info.Server = s.up.serverOf(name)
	}
	if ss != nil {
		info.Session = ss.ID()
		if ip := ss.InitializeParams(); ip != nil {
			info.Era = ip.ProtocolVersion
		}
	}
	ctx, rt, end := s.opts.Tracer.StartRequest(ctx, info, tc)
	return mcpkeep.WithTrace(ctx, tc, rt), end
}

// traceFast starts a fast call's trace (its _meta was read by serve).
// It takes fr's fields, not fr, which would move fr to the heap.
func (s *Server) traceFast(ctx context.Context, public string, ss *mcp.ServerSession, host *mcpkeep.TraceContext) (context.Context, func(json.RawMessage, error)) {
	var tc mcpkeep.TraceContext
	if host != nil {
		tc = *host
	}
	if s.opts.Tracer == nil {
		return mcpkeep.WithTrace(ctx, tc, nil), func(json.RawMessage, error) {}
	}
	ctx, end := s.startTrace(ctx, "tools/call", public, ss, tc)
	return ctx, func(raw json.RawMessage, err error) {
		if err == nil && isErrorResult(raw) {
			err = mcpkeep.ErrToolResult
		}
		end(err)
	}
}

// isErrorResult reports whether a raw tool result says isError.
func isErrorResult(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}
