package mcpkeep

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestElicitationReachesTheHostAsSent (docs/design.md §13): a server's
// elicitation reaches the host's handler with the schema the server sent,
// even one the SDK's client would refuse (SEP-1330's titled multi-select);
// judging it is the host's. Defaults of an accepted answer are filled in
// (SEP-1034), as the SDK's client would.
func TestElicitationReachesTheHostAsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, legacyProtocol, nil, nil)
		r.mustStart(t)
		ss := r.f.session(1)
		titledMulti := map[string]any{"type": "object", "properties": map[string]any{
			"colors": map[string]any{"type": "array", "items": map[string]any{"type": "string",
				"anyOf": []any{map[string]any{"const": "r", "title": "Red"}, map[string]any{"const": "g", "title": "Green"}}}},
			"size": map[string]any{"type": "string", "default": "M"},
		}}
		// The go-sdk server judges a schema before sending it; a server of
		// another SDK does not: swap the schema in below that check.
		r.f.mu.Lock()
		srv := r.f.servers[1]
		r.f.mu.Unlock()
		srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if er, ok := req.(*mcp.ServerRequest[mcp.Params]); ok && method == "elicitation/create" {
					if ep, ok := er.Params.(*mcp.ElicitParams); ok {
						p := *ep // the SDK checks the answer against its own copy
						p.RequestedSchema = titledMulti
						req = &mcp.ServerRequest[mcp.Params]{Session: er.Session, Params: &p}
					}
				}
				return next(ctx, method, req)
			}
		})
		res, err := ss.Elicit(context.Background(), &mcp.ElicitParams{Message: "pick",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "string", "default": "M"}}}})
		if err != nil {
			t.Fatalf("the host never saw the titled multi-select: %v", err)
		}
		if res.Action != "accept" || res.Content["size"] != "M" {
			t.Errorf("answer %+v: want accept with the default size M", res)
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
