package proxy

import (
	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mirror makes the answer to the host's initialize (or discover) the
// server's own: its serverInfo, capabilities and instructions, when its
// first connect succeeded; otherwise the answer stays mcpkeep's, with
// every capability, since the server may come later (docs/design.md §15).
func mirror(pool *mcpkeep.Pool, server string, res mcp.Result) {
	if pool == nil {
		return
	}
	sup, ok := pool.Supervisor(server)
	if !ok {
		return
	}
	info := sup.ServerInfo()
	if info == nil {
		return
	}
	caps := mirroredCaps(info.Capabilities)
	switch r := res.(type) {
	case *mcp.InitializeResult:
		if info.ServerInfo != nil {
			r.ServerInfo = info.ServerInfo
		}
		r.Capabilities, r.Instructions = caps, info.Instructions
	case *mcp.DiscoverResult:
		r.Capabilities, r.Instructions = caps, info.Instructions
		if info.ServerInfo != nil {
			meta := r.GetMeta()
			if meta == nil {
				meta = map[string]any{}
			}
			meta[mcp.MetaKeyServerInfo] = info.ServerInfo
			r.SetMeta(meta)
		}
	}
}

// mirroredCaps is the server's capabilities as the host sees them through
// mcpkeep: every list may change (servers restart with other lists), and
// mcpkeep's tasks extension is advertised whether or not the server has
// it: mcpkeep keeps the tasks, or relays the server's own (docs/design.md §25).
func mirroredCaps(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := withTasksExtension(&mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}})
	if c == nil {
		return out
	}
	out.Experimental, out.Logging, out.Completions = c.Experimental, c.Logging, c.Completions
	if c.Prompts != nil {
		out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if c.Resources != nil {
		out.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: c.Resources.Subscribe}
	}
	return out
}
