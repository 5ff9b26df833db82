package transport

import (
	"context"
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
	// HoldLists holds every tools/list from the start, until the test
	// calls MemGen.ReleaseLists.
	HoldLists bool
	// Rewrite, when set, replaces each message the server sends before
	// the client reads it (a malformed answer, an invalid string...).
	Rewrite func(jsonrpc.Message) jsonrpc.Message
}

// Memory is a scripted in-memory Opener for tests: each generation is a
// real go-sdk server over mcp.NewInMemoryTransports, with faults a test can
// script per generation and handles to kill it or inject notifications.
type Memory struct {
	// Clock drives CloseAfter; nil means the real clock.
	Clock clock.Clock
	// Fault, when set, returns the fault of generation gen.
	Fault func(gen uint64) Fault
	// ServerOptions, when set, returns the options of generation gen's
	// server (subscription and completion handlers, instructions...);
	// tools.listChanged is always advertised.
	ServerOptions func(gen uint64) *mcp.ServerOptions
	// Serve, when set, is called with generation gen's server before it
	// is connected: a test adds prompts, resources and templates to it.
	Serve func(gen uint64, s *mcp.Server)

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
	so := &mcp.ServerOptions{}
	if m.ServerOptions != nil {
		if o := m.ServerOptions(gen); o != nil {
			c := *o
			so = &c
		}
	}
	caps := mcp.ServerCapabilities{}
	if so.Capabilities != nil {
		caps = *so.Capabilities // shallow: only Tools is replaced below
	}
	caps.Tools = &mcp.ToolCapabilities{ListChanged: true}
	so.Capabilities = &caps
	g.server = mcp.NewServer(&mcp.Implementation{Name: "memory", Version: fmt.Sprint(gen)}, so)
	g.listGate = make(chan struct{})
	if !f.HoldLists {
		close(g.listGate)
	}
	g.server.AddReceivingMiddleware(g.countLists)
	for _, n := range names {
		g.AddTool(n)
	}
	if m.Serve != nil {
		m.Serve(gen, g.server)
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
