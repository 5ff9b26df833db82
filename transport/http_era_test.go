package transport_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// Requests to a 2026-07-28 server carry the spec's standard headers
// (Mcp-Method, and Mcp-Name where the body names a tool, prompt or
// resource; docs/design.md §24): the SDK sets them and the generation's
// round tripper keeps them, over configured headers of the same names (a
// configured header never makes header and body disagree, which the
// server would refuse with HeaderMismatch).
func TestHTTPStandardHeadersToModernServer(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(),
		Headers: map[string]string{"Mcp-Method": "bogus", "Mcp-Name": "bogus", "X-Extra": "kept"}}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	if v := c.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	if _, err := c.cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	for method, name := range map[string]string{"tools/call": "echo", "tools/list": ""} {
		n := web.count(func(r webRequest) bool {
			return r.MCPMethod == method && r.Header.Get("Mcp-Name") == name &&
				r.Header.Get("Mcp-Protocol-Version") == "2026-07-28" && r.Header.Get("X-Extra") == "kept"
		})
		if n == 0 {
			t.Errorf("no %s request with Mcp-Name %q, the protocol version and the configured header", method, name)
		}
	}
	if n := web.count(func(r webRequest) bool { return r.MCPMethod == "bogus" || r.Header.Get("Mcp-Name") == "bogus" }); n != 0 {
		t.Errorf("%d requests carried the configured Mcp-Method/Mcp-Name instead of the SDK's", n)
	}
}
