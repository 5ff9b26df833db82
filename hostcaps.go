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
// told those, as far as the supervisor offers them. A legacy server (a
// stdio server shared by hosts of both eras speaks the legacy era) learnt
// the supervisor's at its initialize; it is told the host's in the same
// _meta key, which a 2026-aware server reads before its session's (the
// go-sdk's ServerRequest.ClientCapabilities) and any other ignores.

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

// hasHostCaps reports whether ctx carries a host's capabilities.
func hasHostCaps(ctx context.Context) bool {
	_, ok := ctx.Value(hostCapsKey{}).(*mcp.ClientCapabilities)
	return ok
}

// hostCapsSending is the SDK client's sending middleware that narrows a
// 2026-07-28 request's declared capabilities to its host's, and tells a
// legacy session's server the host's where the client offers them too
// (offered: the client's capabilities in the wire form, as at initialize).
func hostCapsSending(offered map[string]any) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
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
			} else if _, modern := m[mcp.MetaKeyProtocolVersion]; !modern {
				if m == nil {
					m = map[string]any{}
				}
				m[mcp.MetaKeyClientCapabilities] = narrowCaps(offered, host)
				p.SetMeta(m)
			}
			return next(ctx, method, req)
		}
	}
}

// offeredCaps is caps (the client's) in the wire form of a request's
// _meta (roots as RootsV2; the SDK's clientCapabilitiesV2), with sampling
// and elicitation where the client has their handlers, as the SDK's
// client declares them.
func offeredCaps(caps *mcp.ClientCapabilities, sampling, elicitation bool) map[string]any {
	out := map[string]any{}
	if caps.RootsV2 != nil {
		out["roots"] = caps.RootsV2
	}
	if sampling {
		out["sampling"] = &mcp.SamplingCapabilities{}
	}
	if elicitation {
		out["elicitation"] = &mcp.ElicitationCapabilities{}
	}
	return out
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
