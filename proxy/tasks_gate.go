package proxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The extension's methods are for hosts that declared it (docs/design.md
// §25): tasks/get, tasks/update and tasks/cancel from a host that did not,
// on its session's initialize nor in the request's own
// clientCapabilities (2026-07-28), get -32021 (Missing Required Client
// Capability) naming the extension, before the id is looked at.

const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// declared reports whether the host of a tasks/* request declared the
// extension.
func declared(ss *mcp.ServerSession, meta mcp.Meta) bool {
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && optedIn(ip.Capabilities) {
			return true
		}
	}
	raw, ok := meta[metaClientCapabilities]
	if !ok {
		return false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return false
	}
	var caps mcp.ClientCapabilities
	return json.Unmarshal(b, &caps) == nil && optedIn(&caps)
}

// needExtension is the answer to a host that did not declare the
// extension, nil to one that did.
func needExtension(ss *mcp.ServerSession, meta mcp.Meta) error {
	if declared(ss, meta) {
		return nil
	}
	return extensionRequired()
}

// extensionRequired is -32021 naming the extension: the answer to a host
// that did not declare it, for the tasks methods and for a call of a tool
// whose policy is "required" (tasks.go).
func extensionRequired() error {
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "mcpkeep: this request needs the client capability extensions[\"" + tasksExtension + "\"]",
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + tasksExtension + `":{}}}}`),
	}
}
