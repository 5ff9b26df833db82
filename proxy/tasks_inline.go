package proxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that ends within the grace period is answered as a call
// (docs/design.md §25), from the task middleware, which runs before the
// SDK's tools/call handler: the SDK's marking of a 2026-07-28 tool result
// as final (resultType "complete", which that wire requires of every
// result but a task) never runs for it, so the middleware marks it.

// modernToolCall reports whether a tools/call is on the 2026-07-28 wire: its
// session is, or the request says so in its _meta.
func modernToolCall(r *mcp.CallToolRequest) bool {
	if isModern(r.Session) {
		return true
	}
	v, _ := r.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= modernVersion
}

// inlineResult decodes a tool result kept by a task for the host that
// made the call; for a 2026-07-28 host it says resultType "complete"
// unless the server's result already says a result type.
func inlineResult(raw json.RawMessage, modern bool) (*mcp.CallToolResult, error) {
	if modern {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if _, ok := m["resultType"]; !ok {
			m["resultType"] = json.RawMessage(`"complete"`)
			b, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			raw = b
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
