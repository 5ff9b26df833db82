package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// generation is one connection attempt and the session it yields.
//
// ctx, cancel and n never change. tg and cs are written by the loop (from
// messages) before the generation is published to callers through
// Supervisor.live, so the Call fast path reads cs without a lock. Every
// other field is owned by the loop goroutine.
type generation struct {
	n      uint64
	ctx    context.Context // cancelled when the generation ends
	cancel context.CancelFunc
	tg     transport.Generation
	cs     *mcp.ClientSession

	retry       bool // not the first generation of this Start: success logs "recovered"
	activation  bool // the Start's first attempt: owns strict startup registration
	deferred    bool // waiting for an older generation's barrier before opening
	started     bool // the attempt goroutine was started
	attemptDone bool
	closeDone   bool // ClientSession.Close returned, or there never was a session
	closing     bool // the closer goroutine was started
	gone        bool // the transport reported every resource released
	failed      bool // the first failure signal was seen
	ending      bool // teardown started
	barrierDone bool
	syncDirty   bool // a list_changed arrived while connecting

	connectTimer *clock.Timer
	stableTimer  *clock.Timer
	termTimer    *clock.Timer

	callsMu sync.Mutex // guards the fields below; taken by Call and the loop
	// calls holds the cancel funcs of in-flight calls whose callers can
	// cancel too; endCalls cancels them all when the generation ends.
	calls      map[uint64]context.CancelFunc
	callSeq    uint64
	callsEnded bool
}

func (s *Supervisor) newGeneration() *generation {
	s.nextGen++
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{n: s.nextGen, ctx: ctx, cancel: cancel}
	s.gens[g.n] = g
	return g
}

// barrierComplete: the attempt returned, the session (if any) is closed,
// and the transport proved its resources released (DESIGN §2).
func (g *generation) barrierComplete() bool {
	return g.attemptDone && g.closeDone && g.gone
}

// attempt runs on its own goroutine: open, handshake, initial tools/list.
// Everything it learns reaches the loop as messages tagged with g.n.
func (s *Supervisor) attempt(g *generation) {
	defer s.wg.Done()
	tg, err := s.opts.Opener.Open(g.ctx, g.n)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, err: fmt.Errorf("open: %w", err)})
		return
	}
	s.send(message{kind: mOpened, gen: g.n, tg: tg})

	client := mcp.NewClient(s.opts.Client, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			// The SDK runs this on the connection's notification queue:
			// hand it to the loop and return; never call back into the SDK.
			s.sendOrAbandon(g.ctx, message{kind: mToolsChanged, gen: g.n})
		},
	})
	var sopts *mcp.ClientSessionOptions
	if so, ok := s.opts.Opener.(transport.SessionOptioner); ok {
		sopts = so.SessionOptions()
	}
	cs, err := client.Connect(g.ctx, tg.Transport(), sopts)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, err: fmt.Errorf("handshake: %w", err)})
		return
	}
	defs, err := s.listTools(g.ctx, cs)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, cs: cs, err: fmt.Errorf("initial tools/list: %w", err)})
		return
	}
	s.send(message{kind: mAttempt, gen: g.n, cs: cs, defs: defs})
}

// listTools fetches every page and builds the server's definitions.
func (s *Supervisor) listTools(ctx context.Context, cs *mcp.ClientSession) ([]tools.Tool, error) {
	var list []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return tools.Build(s.opts.Name, list, s.opts.Namer, s.opts.Limits)
}

// watchSession reports the end of an established generation's session.
func (s *Supervisor) watchSession(g *generation) {
	defer s.wg.Done()
	err := g.cs.Wait()
	if err == nil {
		// A clean end of the stream says nothing; the transport may know
		// why (the child's exit status, the HTTP failure).
		err = errSessionEnded
		if st := g.tg.Exit().Status; st != "" {
			err = fmt.Errorf("%w: %s", errSessionEnded, st)
		}
	}
	s.send(message{kind: mSessionEnded, gen: g.n, err: err})
}

// watchGone reports the transport's close signal, or gives up when the
// supervisor finishes (a drain that timed out must not leak watchers).
func (s *Supervisor) watchGone(g *generation) {
	defer s.wg.Done()
	select {
	case <-g.tg.Gone():
		s.send(message{kind: mGone, gen: g.n})
	case <-s.stop:
	}
}

// closeSession runs ClientSession.Close, which waits for in-flight calls;
// the generation's context was cancelled first, so it stays bounded.
func (s *Supervisor) closeSession(g *generation) {
	defer s.wg.Done()
	_ = g.cs.Close()
	s.send(message{kind: mCloseReturned, gen: g.n})
}

// call forwards one tool call over this generation. The call's context is
// also cancelled when the generation ends, so a hung server cannot keep
// ClientSession.Close (and so the barrier) waiting.
//
// The hot path avoids context.AfterFunc (three allocations and a
// registration in the generation context's child map): a caller that can
// never cancel gets the generation's context carrying the caller's values,
// and any other call registers its cancel func with the generation.
//
// sent is false when the call certainly never reached the server: the
// generation had ended, or the SDK refused to send it because the
// connection had already closed (mcp.ErrConnectionClosed).
func (g *generation) call(ctx context.Context, server, tool string, args any) (res *mcp.CallToolResult, sent bool, err error) {
	var cctx context.Context
	if ctx.Done() == nil {
		cctx = genValues{Context: g.ctx, values: ctx}
	} else {
		c, cancel := context.WithCancel(ctx)
		id, ok := g.addCall(cancel)
		if !ok {
			cancel()
			return nil, false, nil
		}
		defer g.removeCall(id, cancel)
		cctx = c
	}
	res, err = g.cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil && errors.Is(err, mcp.ErrConnectionClosed) {
		return nil, false, err
	}
	if err != nil && ctx.Err() == nil && connectionEnded(g, err) {
		err = fmt.Errorf("mcpkeep: server %q gen %d: %w: %w", server, g.n, ErrConnectionLost, err)
	}
	return res, true, err
}

func (g *generation) addCall(cancel context.CancelFunc) (uint64, bool) {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.callsEnded {
		return 0, false
	}
	if g.calls == nil {
		g.calls = make(map[uint64]context.CancelFunc)
	}
	g.callSeq++
	g.calls[g.callSeq] = cancel
	return g.callSeq, true
}

func (g *generation) removeCall(id uint64, cancel context.CancelFunc) {
	g.callsMu.Lock()
	delete(g.calls, id)
	g.callsMu.Unlock()
	cancel()
}

// endCalls cancels every in-flight call; later calls fail at once.
func (g *generation) endCalls() {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	g.callsEnded = true
	for _, cancel := range g.calls {
		cancel()
	}
}

// genValues is the generation's context (its Done, Err and Deadline)
// carrying the values of a caller's context that can never be cancelled.
type genValues struct {
	context.Context
	values context.Context
}

func (c genValues) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// connectionEnded tells a call that failed because its connection ended
// from one the server answered with an error: a call pending when the peer
// died gets the read loop's own error (io.EOF, or a closed pipe).
func connectionEnded(g *generation, err error) bool {
	return g.ctx.Err() != nil ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrClosed)
}
