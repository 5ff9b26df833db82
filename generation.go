package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// generation is one connection attempt and the session it yields.
//
// n, ctx and cancel never change. tg and cs are written by the loop (from
// messages) before the generation is published to callers through
// Supervisor.live, so the Call fast path reads cs without a lock. The
// flags and timers are owned by the loop goroutine; callsMu guards the
// in-flight call registry, which Call and the loop share.
type generation struct {
	n      uint64
	ctx    context.Context // cancelled when the generation ends
	cancel context.CancelFunc
	tg     transport.Generation
	cs     *mcp.ClientSession
	client *mcp.Client // written by the attempt before it reports
	modern bool        // the session speaks 2026-07-28 (written with cs)
	// view is the generation's current catalog, for the checks of
	// GetPrompt and ReadResource; replaced by the loop at each sync.
	view atomic.Pointer[catalogView]
	// applied is the sticky session state this generation's server has.
	applied applied
	// subWait is reconcile's wait for a 2026-07-28 subscription's answer.
	subWait subWait

	// Owned by the loop goroutine.
	retry       bool // not the first generation of this Start: success logs "recovered"
	activation  bool // the Start's first attempt: owns strict startup registration
	deferred    bool // waiting for an older generation's barrier before opening
	started     bool // the attempt goroutine was started
	established bool // connected: the server served (its teardown has the stdin grace)
	attemptDone bool
	closeDone   bool // ClientSession.Close returned, or there never was a session
	closing     bool // the closer goroutine was started
	gone        bool // the transport reported every resource released
	failed      bool // the first failure signal was seen
	ending      bool // teardown started
	barrierDone bool
	syncing     listKinds // the kind whose sync is running (one at a time), or none
	pending     listKinds // kinds with a list_changed no sync has covered yet

	connectTimer *clock.Timer
	deferTimer   *clock.Timer
	stableTimer  *clock.Timer
	termTimer    *clock.Timer

	callsMu sync.Mutex // guards the fields below; taken by Call and the loop
	// calls holds the cancel funcs of in-flight calls whose callers can
	// cancel too; endCalls cancels them all when the generation ends.
	calls      map[uint64]context.CancelFunc
	callSeq    uint64
	callsEnded bool
	// progress maps the tokens of in-flight requests to their handlers.
	progress    map[string]func(*mcp.ProgressNotificationParams)
	progressSeq uint64
}

func newGeneration(n uint64) *generation {
	ctx, cancel := context.WithCancel(context.Background())
	return &generation{n: n, ctx: ctx, cancel: cancel}
}

// barrierComplete: the attempt returned, the session (if any) is closed,
// and the transport proved its resources released (docs/design.md §2).
func (g *generation) barrierComplete() bool {
	return g.attemptDone && g.closeDone && g.gone
}

// call forwards one tool call over this generation (see begin and
// settle); progress, when set, receives the server's progress
// notifications for this call.
func (g *generation) call(ctx context.Context, server, tool string, args any, progress func(*mcp.ProgressNotificationParams), level mcp.LoggingLevel) (res *mcp.CallToolResult, sent bool, err error) {
	cctx, id, cancel, ok := g.begin(ctx)
	if !ok {
		return nil, false, nil
	}
	if cancel != nil {
		defer g.removeCall(id, cancel)
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if level != "" && g.modern {
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: string(level)}
	}
	if progress != nil {
		tok := g.addProgress(progress)
		defer g.removeProgress(tok)
		params.SetProgressToken(tok)
	}
	res, err = g.cs.CallTool(cctx, params)
	if sent, err = g.settle(ctx, server, err); !sent {
		return nil, false, err
	}
	return res, true, err
}

// begin derives the context of one request over this generation. The
// request's context is also cancelled when the generation ends, so a hung
// server cannot keep ClientSession.Close (and so the barrier) waiting.
//
// The hot path avoids context.AfterFunc (three allocations and a
// registration in the generation context's child map): a caller that can
// never cancel gets the generation's context carrying the caller's values,
// and any other request registers its cancel func with the generation
// (the caller releases it with removeCall). ok is false when the
// generation has ended.
func (g *generation) begin(ctx context.Context) (cctx context.Context, id uint64, cancel context.CancelFunc, ok bool) {
	if ctx.Done() == nil {
		return genValues{Context: g.ctx, values: ctx}, 0, nil, true
	}
	c, cancel := context.WithCancel(ctx)
	id, ok = g.addCall(cancel)
	if !ok {
		cancel()
		return nil, 0, nil, false
	}
	return c, id, cancel, true
}

// settle classifies a request's error. sent is false when the request
// certainly never reached the server: the SDK refused to send it because
// the connection had already closed (mcp.ErrConnectionClosed). A request
// in flight when the connection ended gets ErrConnectionLost.
func (g *generation) settle(ctx context.Context, server string, err error) (sent bool, _ error) {
	if err == nil {
		return true, nil
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return false, err
	}
	if ctx.Err() == nil && connectionEnded(g, err) {
		err = fmt.Errorf("mcpkeep: server %q gen %d: %w: %w", server, g.n, ErrConnectionLost, err)
	}
	return true, err
}

// addProgress registers a call's progress handler under a fresh token.
func (g *generation) addProgress(fn func(*mcp.ProgressNotificationParams)) string {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	g.progressSeq++
	tok := "mcpkeep-" + strconv.FormatUint(g.n, 10) + "-" + strconv.FormatUint(g.progressSeq, 10)
	if g.progress == nil {
		g.progress = make(map[string]func(*mcp.ProgressNotificationParams))
	}
	g.progress[tok] = fn
	return tok
}

// removeProgress forgets a call's token: a notification that arrives
// after the call returned reaches nobody's call.
func (g *generation) removeProgress(tok string) {
	g.callsMu.Lock()
	delete(g.progress, tok)
	g.callsMu.Unlock()
}

// progressHandler returns the handler of a live call's token, or nil.
func (g *generation) progressHandler(tok any) func(*mcp.ProgressNotificationParams) {
	s, ok := tok.(string)
	if !ok {
		return nil
	}
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	return g.progress[s]
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
