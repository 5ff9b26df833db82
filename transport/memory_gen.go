package transport

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MemGen is one scripted generation.
type MemGen struct {
	gen    uint64
	fault  Fault
	server *mcp.Server
	client *mcp.InMemoryTransport
	// session is the server side (nil when Hang); rawServer the hung side.
	session   *mcp.ServerSession
	rawServer mcp.Connection
	inject    chan jsonrpc.Message
	bg        sync.WaitGroup // the hang reader

	mu         sync.Mutex // guards the fields below
	conn       *memConn   // the client side, once connected
	closed     bool       // client side closed
	released   bool       // ReleaseGone called
	goneClosed bool
	gone       chan struct{}
	closeTimer *clock.Timer
	serverConn mcp.Connection // the server's side of the pipe
	listGate   chan struct{}  // tools/list waits for it; closed = open
	lists      int            // tools/list requests served or in progress
	listing    int            // in progress now
	maxListing int            // most in progress at once
	terminated bool           // Terminate was called
	aborted    bool           // Abort was called
	cause      error          // Exit().Cause, set by KillWith
}

// countLists is server middleware: it counts tools/list requests, tracks
// their concurrency and lets a test hold them (HoldLists).
func (g *MemGen) countLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			return next(ctx, method, req)
		}
		g.mu.Lock()
		g.lists++
		g.listing++
		g.maxListing = max(g.maxListing, g.listing)
		gate := g.listGate
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.listing--
			g.mu.Unlock()
		}()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return next(ctx, method, req)
	}
}

// HoldLists makes tools/list requests wait until ReleaseLists.
func (g *MemGen) HoldLists() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listGate = make(chan struct{})
}

// ReleaseLists lets held tools/list requests proceed.
func (g *MemGen) ReleaseLists() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.listGate:
	default:
		close(g.listGate)
	}
}

// Lists reports how many tools/list requests the server received, and the
// most that were in progress at once.
func (g *MemGen) Lists() (total, maxConcurrent int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lists, g.maxListing
}

// Number returns the generation number.
func (g *MemGen) Number() uint64 { return g.gen }

// AddTool adds an echo tool (or "hang") to this generation's server; the
// SDK then announces tools/list_changed after its 10 ms debounce.
func (g *MemGen) AddTool(name string) {
	if name == "hang" {
		g.server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		return
	}
	g.server.AddTool(&mcp.Tool{Name: name, Description: "echo " + name,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
		})
}

// NotifyToolsChanged injects notifications/tools/list_changed into the
// client's stream at once, without the server's debounce timer.
func (g *MemGen) NotifyToolsChanged() {
	msg := &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}
	select {
	case g.inject <- msg:
	default:
	}
}

// Kill closes the server side: the client sees the connection end.
//
// The server's connection is closed before its session: go-sdk v1.8.0's
// ServerSession.Close can wait forever for a subscriptions/listen handler
// that arrived just before it but was not yet registered for
// cancellation, while a failed read cancels every in-flight handler.
func (g *MemGen) Kill() {
	g.mu.Lock()
	sc := g.serverConn
	g.mu.Unlock()
	if sc != nil {
		_ = sc.Close()
	}
	if g.session != nil {
		_ = g.session.Close()
	}
	if g.rawServer != nil {
		_ = g.rawServer.Close()
	}
}

// KillWith kills the server as Kill does, and makes cause the
// generation's Exit().Cause: a generation that ended itself for a reason
// the supervisor acts on (ErrSignInRequired).
func (g *MemGen) KillWith(cause error) {
	g.mu.Lock()
	g.cause = cause
	g.mu.Unlock()
	g.Kill()
}

// ReleaseGone delivers a withheld close signal (Fault.HoldGone).
func (g *MemGen) ReleaseGone() {
	g.mu.Lock()
	g.released = true
	g.mu.Unlock()
	g.maybeGone()
}

// Transport implements Generation.
func (g *MemGen) Transport() mcp.Transport { return memTransport{g} }

// Gone implements Generation.
func (g *MemGen) Gone() <-chan struct{} { return g.gone }

// Terminate implements Generation: both sides are closed.
func (g *MemGen) Terminate() {
	g.mu.Lock()
	g.terminated = true
	g.mu.Unlock()
	g.teardown()
}

// Abort implements Aborter. An in-memory server has no courtesy step to
// skip, so it tears down as Terminate does; it is recorded apart, so tests
// can tell which of the two the supervisor called (Aborted, Terminated).
func (g *MemGen) Abort() {
	g.mu.Lock()
	g.aborted = true
	g.mu.Unlock()
	g.teardown()
}

// Terminated reports whether Terminate was called.
func (g *MemGen) Terminated() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.terminated
}

// Aborted reports whether Abort was called.
func (g *MemGen) Aborted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aborted
}

func (g *MemGen) teardown() {
	g.Kill()
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c != nil {
		_ = c.Close()
	} else {
		// Never connected: the server side is all there is, closed above.
		g.markClosed()
	}
	g.bg.Wait()
}

// Exit implements Generation.
func (g *MemGen) Exit() ExitInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ExitInfo{Cause: g.cause}
}

func (g *MemGen) isGone() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.goneClosed
}

func (g *MemGen) markClosed() {
	g.mu.Lock()
	g.closed = true
	if g.closeTimer != nil {
		g.closeTimer.Stop()
	}
	g.mu.Unlock()
	g.maybeGone()
}

func (g *MemGen) maybeGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed && (!g.fault.HoldGone || g.released) && !g.goneClosed {
		g.goneClosed = true
		close(g.gone)
	}
}
