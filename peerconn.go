package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's answer is never taken for a transport failure (docs/design.md
// §19). The SDK maps the JSON-RPC codes -32003 and -32004 (its own "client
// is closing" and "server is closing") to mcp.ErrConnectionClosed whoever
// sent them, and drops the original error from the chain; the supervisor
// reads ErrConnectionClosed as "the request was never sent". So a server
// answering with either code would have its call wait for a generation end
// that never comes, and sent again after one. peerConn hands such an answer
// to the SDK as a peerError instead: no longer one of the SDK's closing
// codes to errors.Is, still a *jsonrpc.Error to errors.As.

// JSON-RPC codes the SDK reserves for its own closing connection.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
)

// peerTransport wraps a generation's transport so its connection is a
// peerConn where that is safe (see peerErrorsSeen); g learns which.
type peerTransport struct {
	mcp.Transport
	g *generation
}

func (t peerTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil || !wrappable(c) {
		return c, err
	}
	t.g.peerErrs = true
	// Beside the SDK's session, the connection carries the relay's raw
	// calls (CallRaw).
	t.g.raw = transport.NewRawConn(c)
	return peerConn{Connection: t.g.raw, g: t.g}, nil
}

// sdkPkg is the package of the SDK's own connection types.
var sdkPkg = reflect.TypeFor[mcp.Client]().PkgPath()

// wrappable reports whether c can be wrapped without hiding an optional
// interface the SDK looks for: the SDK's Streamable HTTP client
// connection has one with an unexported method (it learns the session's
// protocol version through it), which no wrapper outside the SDK can
// forward. A type defined outside the SDK cannot implement such an
// interface; of the SDK's own client connections only ioConn (stdio,
// in-memory) is known to have none.
func wrappable(c mcp.Connection) bool {
	t := reflect.TypeOf(c)
	if t == nil {
		return false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() != sdkPkg || t.Name() == "ioConn"
}

// peerConn is a connection whose peer's closing codes are peerErrors. It
// also counts, for the calls of g, the progress it reads in wire order
// (generation.progressRead): what was read before a reply is what the
// call must see delivered before it returns.
type peerConn struct {
	mcp.Connection
	g *generation
}

func (c peerConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if q, ok := m.(*jsonrpc.Request); ok {
		switch q.Method {
		case "notifications/progress":
			c.g.progressRead(q.Params)
		case "notifications/message":
			c.g.logs.readOne(q.Params)
		}
	}
	if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil {
		// An answer without a result is the request's error, not the
		// io.EOF the SDK would decode it to (transport.CheckAnswer).
		r.Error = transport.CheckAnswer(r)
	}
	if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
		var je *jsonrpc.Error
		if errors.As(r.Error, &je) && je != nil && (je.Code == codeClientClosing || je.Code == codeServerClosing) {
			r.Error = &peerError{je}
		}
	}
	return m, err
}

// peerError is a server's JSON-RPC error with one of the SDK's closing
// codes. It has no Unwrap (errors.Is would match the SDK's sentinels by
// code) but an As, so callers still get the *jsonrpc.Error.
type peerError struct{ e *jsonrpc.Error }

func (p *peerError) Error() string {
	return fmt.Sprintf("the server answered with error %d: %s", p.e.Code, p.e.Message)
}

func (p *peerError) As(target any) bool {
	if t, ok := target.(**jsonrpc.Error); ok {
		*t = p.e
		return true
	}
	return false
}
