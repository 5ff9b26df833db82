package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fault scripts what goes wrong with one in-memory generation.
type Fault struct {
	// OpenErr makes Open fail (nothing is started).
	OpenErr error
	// ConnectErr makes the transport's Connect fail inside the handshake.
	ConnectErr error
	// Hang: the server reads but never answers, so the handshake hangs
	// until the caller's context ends.
	Hang bool
	// CloseAfter closes the server side this long (on the Memory's clock)
	// after Open; zero means never.
	CloseAfter time.Duration
	// HoldGone withholds the close signal: Gone stays open until the test
	// calls MemGen.ReleaseGone (delayed) or forever (never delivered).
	HoldGone bool
	// Gate, when non-nil, holds the transport's Connect until it is closed
	// (or the attempt's context ends): a test acts while "connecting".
	Gate <-chan struct{}
}

// Memory is a scripted in-memory Opener for tests: each generation is a
// real go-sdk server over mcp.NewInMemoryTransports, with faults a test can
// script per generation and handles to kill it or inject notifications.
type Memory struct {
	// Clock drives CloseAfter; nil means the real clock.
	Clock clock.Clock
	// Fault, when set, returns the fault of generation gen.
	Fault func(gen uint64) Fault

	mu sync.Mutex // guards the fields below
	// tools are the tool names the next generations' servers offer.
	tools []string
	// gens holds every generation opened, by number.
	gens map[uint64]*MemGen
	// maxLive is the most generations ever live at once.
	maxLive int
	// opened is signalled (non-blocking) on every Open.
	opened chan uint64
}

// NewMemory returns a Memory whose servers offer the named tools. Every
// tool echoes its "text" argument; a tool named "hang" blocks until the
// call is cancelled.
func NewMemory(tools ...string) *Memory {
	return &Memory{tools: tools, gens: make(map[uint64]*MemGen), opened: make(chan uint64, 1024)}
}

// SetTools changes the tools offered by generations opened from now on.
func (m *Memory) SetTools(tools ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = append([]string(nil), tools...)
}

// Gen returns generation gen's handle, or nil if it was never opened.
func (m *Memory) Gen(gen uint64) *MemGen {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gens[gen]
}

// Opened reports generation numbers as they are opened.
func (m *Memory) Opened() <-chan uint64 { return m.opened }

// Live counts generations whose resources are not yet released (Gone not
// closed). Invariant I1 says it is never above one.
func (m *Memory) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.gens {
		if !g.isGone() {
			n++
		}
	}
	return n
}

// MaxLive is the most generations that were ever live at once.
func (m *Memory) MaxLive() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxLive
}

func (m *Memory) clock() clock.Clock {
	if m.Clock == nil {
		return clock.New()
	}
	return m.Clock
}

// Open implements Opener.
func (m *Memory) Open(ctx context.Context, gen uint64) (Generation, error) {
	var f Fault
	if m.Fault != nil {
		f = m.Fault(gen)
	}
	if f.OpenErr != nil {
		return nil, fmt.Errorf("memory: open gen %d: %w", gen, f.OpenErr)
	}
	m.mu.Lock()
	names := append([]string(nil), m.tools...)
	m.mu.Unlock()

	g := &MemGen{gen: gen, fault: f, gone: make(chan struct{}), inject: make(chan jsonrpc.Message, 16)}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "memory", Version: fmt.Sprint(gen)},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	g.listGate = make(chan struct{})
	close(g.listGate)
	g.server.AddReceivingMiddleware(g.countLists)
	for _, n := range names {
		g.AddTool(n)
	}
	ct, st := mcp.NewInMemoryTransports()
	if f.Hang {
		conn, err := st.Connect(ctx)
		if err != nil {
			return nil, err
		}
		g.rawServer = conn
		g.bg.Add(1)
		go func() { // read and discard, never answer
			defer g.bg.Done()
			for {
				if _, err := conn.Read(context.Background()); err != nil {
					return
				}
			}
		}()
	} else {
		ss, err := g.server.Connect(ctx, serverSide{st, g}, nil)
		if err != nil {
			return nil, err
		}
		g.session = ss
	}
	g.client = ct

	m.mu.Lock()
	m.gens[gen] = g
	live := 0
	for _, x := range m.gens {
		if !x.isGone() {
			live++
		}
	}
	if live > m.maxLive {
		m.maxLive = live
	}
	m.mu.Unlock()
	select {
	case m.opened <- gen:
	default:
	}
	if f.CloseAfter > 0 {
		g.closeTimer = m.clock().AfterFunc(f.CloseAfter, g.Kill)
	}
	return g, nil
}

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
func (g *MemGen) Exit() ExitInfo { return ExitInfo{} }

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

// ErrScripted is wrapped by scripted connect failures.
var ErrScripted = errors.New("scripted fault")

type memTransport struct{ g *MemGen }

func (t memTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	g := t.g
	if g.fault.ConnectErr != nil {
		g.Kill()
		g.markClosed()
		return nil, fmt.Errorf("memory: connect gen %d: %w", g.gen, g.fault.ConnectErr)
	}
	if g.fault.Gate != nil {
		select {
		case <-g.fault.Gate:
		case <-ctx.Done():
			g.Kill()
			g.markClosed()
			return nil, ctx.Err()
		}
	}
	g.mu.Lock()
	terminated := g.closed
	g.mu.Unlock()
	if terminated {
		return nil, fmt.Errorf("memory: connect gen %d: terminated", g.gen)
	}
	inner, err := g.client.Connect(ctx)
	if err != nil {
		g.markClosed()
		return nil, err
	}
	c := &memConn{g: g, inner: inner, reads: make(chan readResult), done: make(chan struct{})}
	// The pump is counted before c is published: Terminate may Close c
	// (and wait for the pump) as soon as it can see it.
	c.pump.Add(1)
	go c.readPump()
	g.mu.Lock()
	g.conn = c
	g.mu.Unlock()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// memConn wraps the client side so notifications can be injected and the
// close is observed (the in-memory close barrier).
type memConn struct {
	g     *MemGen
	inner mcp.Connection
	reads chan readResult
	done  chan struct{}
	pump  sync.WaitGroup
	once  sync.Once
}

func (c *memConn) readPump() {
	defer c.pump.Done()
	for {
		msg, err := c.inner.Read(context.Background())
		select {
		case c.reads <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *memConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.g.inject:
		return m, nil
	case r := <-c.reads:
		return r.msg, r.err
	case <-c.done:
		return nil, errors.New("memory: connection closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Write(ctx context.Context, m jsonrpc.Message) error {
	return c.inner.Write(ctx, m)
}

func (c *memConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.done)
		err = c.inner.Close()
		c.pump.Wait()
		c.g.Kill()
		c.g.markClosed()
	})
	return err
}

func (c *memConn) SessionID() string { return "" }

// serverSide records the server's connection (unwrapped: the SDK relies on
// its optional interfaces) so Kill can close it under the session.
type serverSide struct {
	inner mcp.Transport
	g     *MemGen
}

func (t serverSide) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err == nil {
		t.g.mu.Lock()
		t.g.serverConn = c
		t.g.mu.Unlock()
	}
	return c, err
}
