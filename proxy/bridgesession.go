package proxy

import "github.com/modelcontextprotocol/go-sdk/mcp"

// bridgeSession is the host session a bridge opened or continued by a
// request on ss is bound to (bridges.resume): ss itself, except for a
// request the HTTP front served statelessly (2026-07-28, no
// Mcp-Session-Id: docs/design.md §24), whose session lives for that one
// request. Such a bridge is bound to none (nil), so the host's next
// round, a request of its own, may continue it.
func bridgeSession(ss *mcp.ServerSession, extra *mcp.RequestExtra) *mcp.ServerSession {
	if extra != nil && extra.Header != nil && extra.Header.Get(sessionIDHeader) == "" {
		return nil
	}
	return ss
}
