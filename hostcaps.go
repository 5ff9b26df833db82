package mcpkeep

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host on protocol 2026-07-28 declares its capabilities in each request
// (SEP-2575), and a server must not rely on one the request did not
// declare (it answers -32021, or asks only for what was declared). The
// supervisor's client declares what its host handlers offer, for every
// host at once; a caller that knows the host's own (the proxy, docs/design.md
// §24) puts them on the request's context, and a server on 2026-07-28 is
// told those, as far as the supervisor offers them.

type hostCapsKey struct{}

// WithHostCapabilities returns ctx carrying the capabilities the host
// declared for this request: a server on protocol 2026-07-28 is told
// sampling, elicitation and roots only where caps has them too. A nil
// caps returns ctx as it is.
func WithHostCapabilities(ctx context.Context, caps *mcp.ClientCapabilities) context.Context {
	if caps == nil {
		return ctx
	}
	return context.WithValue(ctx, hostCapsKey{}, caps)
}

// hostCapsSending is the SDK client's sending middleware that narrows a
// 2026-07-28 request's declared capabilities to its host's.
func hostCapsSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		host, ok := ctx.Value(hostCapsKey{}).(*mcp.ClientCapabilities)
		p := req.GetParams()
		if !ok || !tracedMethods[method] || p == nil {
			return next(ctx, method, req)
		}
		m := p.GetMeta()
		// The SDK put the client's own there (a 2026-07-28 session only).
		if own, ok := m[mcp.MetaKeyClientCapabilities]; ok {
			m[mcp.MetaKeyClientCapabilities] = narrowCaps(own, host)
		}
		return next(ctx, method, req)
	}
}

// narrowCaps is own (the client's declared capabilities, in the SDK's
// wire form) without the sampling, elicitation or roots host lacks.
func narrowCaps(own any, host *mcp.ClientCapabilities) any {
	data, err := json.Marshal(own)
	var out map[string]any
	if err != nil || json.Unmarshal(data, &out) != nil {
		return own
	}
	if host.Sampling == nil {
		delete(out, "sampling")
	}
	if host.Elicitation == nil {
		delete(out, "elicitation")
	}
	if host.RootsV2 == nil && !host.Roots.ListChanged {
		delete(out, "roots")
	}
	return out
}
