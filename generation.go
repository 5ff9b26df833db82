package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	logs   logsDelivered   // log messages read and delivered (logsdelivered.go)
	ctx    context.Context // cancelled when the generation ends
	cancel context.CancelFunc
	tg     transport.Generation
	cs     *mcp.ClientSession
	client *mcp.Client // written by the attempt before it reports
	modern bool        // the session speaks 2026-07-28 (written with cs)
	// peerErrs: the connection is a peerConn, so mcp.ErrConnectionClosed
	// on it is the connection's own end, never the server's answer
	// (written by the attempt's Connect, before cs is published).
	peerErrs bool
	// raw carries CallRaw's requests beside the session, where the
	// connection is wrappable (written by the attempt's Connect with
	// peerErrs).
	raw *transport.RawConn
	// view is the generation's current catalog, for the checks of
	// GetPrompt and ReadResource; replaced by the loop at each sync.
	view atomic.Pointer[catalogView]
	// applied is the sticky session state this generation's server has.
	applied applied
	// subWait is reconcile's wait for a 2026-07-28 subscription's answer.
	subWait subWait

	// Owned by the loop goroutine.
	retry      bool // not the first generation of this Start: success logs "recovered"
	cause      StartCause
	activation bool // the Start's first attempt: owns strict startup registration
	// listLater: a demand start of a server whose catalog is registered
	// (cached, or kept through an idle stop). Its handshake is enough to
	// serve the request; the lists follow as a sync (docs/design.md §20).
	// Set by the loop before the attempt goroutine starts.
	listLater   bool
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
	syncing     listKinds           // the kind whose sync is running (one at a time), or none
	pending     listKinds           // kinds with a list_changed no sync has covered yet
	refused     map[refusedKey]bool // items already logged as refused

	connectTimer *clock.Timer
	deferTimer   *clock.Timer
	stableTimer  *clock.Timer
	termTimer    *clock.Timer
	idleTimer    *clock.Timer
	// syncHeld: the kinds a demand start lists once its requests ended
	// (docs/design.md §20); syncTimer bounds the hold.
	syncHeld  listKinds
	syncTimer *clock.Timer

	// gate is set by the loop while an idle stop decides (docs/design.md
	// §20): a request reaching begin meanwhile waits until the stop backs
	// out (the channel is closed) or the generation ends. The loop closes
	// the generation to new requests before it reads whether any is in
	// flight, so none can start between that check and the stop.
	gate atomic.Pointer[chan struct{}]

	// ctxReuse caches whether this generation's requests get reused
	// contexts (see callsKeepNoContext): 0 not known yet, 1 yes, 2 no.
	ctxReuse atomic.Int32

	callsMu sync.Mutex // guards the fields below; taken by Call and the loop
	// inflight lists the in-flight requests' callCtx (the reuse path);
	// free holds ended ones ready for the next request. endCalls closes
	// every listed one when the generation ends.
	inflight callList
	free     []*callCtx
	// calls holds the in-flight requests over a transport whose contexts
	// are not reused, when their callers can cancel too (their callers'
	// contexts for a server's request, related.go); endCalls cancels them
	// all as well.
	calls      map[uint64]openCall
	callSeq    uint64
	callsEnded bool
	// progress maps the tokens of in-flight requests to their handlers.
	progress    map[string]*progressEntry
	progressSeq uint64
}

func newGeneration(n uint64) *generation {
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{n: n, ctx: ctx, cancel: cancel}
	g.applied.turn = make(chan struct{}, 1)
	return g
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
	sc, ok := g.begin(ctx)
	if !ok {
		return nil, false, nil
	}
	defer g.end(sc)
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if level != "" && g.modern {
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: string(level)}
	}
	if progress != nil {
		tok := g.addProgress(progress)
		defer g.removeProgress(tok)
		params.SetProgressToken(tok)
	}
	res, err = g.cs.CallTool(sc.ctx, params)
	if sent, err = g.settle(ctx, server, err); !sent {
		return nil, false, err
	}
	return res, true, err
}

// begin makes the context of one request over this generation: the
// caller's values and deadline, done when the caller's context is done or
// when the generation ends, so a hung server cannot keep
// ClientSession.Close (and so the barrier) waiting. ok is false when the
// generation has ended. Every begin is paired with an end.
//
// Nothing is derived per request where the transport allows it (see
// callsKeepNoContext): the request gets a callCtx from the generation's
// free list, whose done channel the generation closes when it ends. A
// caller that can cancel closes it too, through a context.AfterFunc on the
// caller's context (two allocations, the least the context package allows
// for watching a context it did not make). A caller that keeps its
// context pays that once: the second request in a row on the same Done
// channel keeps its hook after the request, so the next ones register
// nothing; a hook on a context seen once is stopped at the request's end
// (a fresh context per request is usually cancelled right after it, and a
// hook still registered would then fire and cost the callCtx).
// A callCtx that was closed, or from which a context was derived, is never
// reused. Over any other transport a caller that can never cancel gets a
// child of the generation's context carrying its values, and any other one a
// context.WithCancel registered with the generation; either is cancelled
// when the request returns.
func (g *generation) begin(ctx context.Context) (sc callScope, ok bool) {
	if !g.admitted() {
		return sc, false
	}
	if !g.reuseContexts() {
		if ctx.Done() == nil {
			// Still a context that ends with the request: the SDK's
			// Streamable HTTP client reads an answered event stream to
			// its end on the request's context, and a server may keep it
			// open for good (docs/design.md §8).
			c, cancel := context.WithCancel(genValues{Context: g.ctx, values: ctx})
			return callScope{ctx: c, cancel: cancel}, true
		}
		c, cancel := context.WithCancel(ctx)
		id, ok := g.addCall(ctx, cancel)
		if !ok {
			cancel()
			return sc, false
		}
		return callScope{ctx: c, id: id, cancel: cancel}, true
	}
	done := ctx.Done()
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.callsEnded {
		return sc, false
	}
	c := g.takeFree(done)
	c.caller = ctx
	g.inflight.push(c)
	if done != nil {
		if err := ctx.Err(); err != nil {
			c.close(err)
		} else if c.hookDone != done {
			// A context seen on the request before is kept by its
			// caller: its hook stays for the next ones.
			c.keep = done == c.lastDone
			c.hook(ctx)
		}
	}
	return callScope{ctx: c, c: c}, true
}

// admitted waits while an idle stop decides whether to end g (see gate)
// and reports whether g still takes requests. The wait is one loop
// handler long, so the caller's own context is not watched: a request
// that gave up would otherwise have to be told apart from one that was
// never sent.
func (g *generation) admitted() bool {
	for {
		p := g.gate.Load()
		if p == nil {
			return true
		}
		select {
		case <-*p:
		case <-g.ctx.Done():
			return false
		}
	}
}

// closeCalls closes g to new requests (the loop, deciding an idle stop);
// openCalls lets the ones that waited go on (the stop backed out, or g
// ended and they find it so).
func (g *generation) closeCalls() {
	ch := make(chan struct{})
	g.gate.Store(&ch)
}

func (g *generation) openCalls() {
	if p := g.gate.Swap(nil); p != nil {
		close(*p)
	}
}

// callsOpen reports whether g admits new requests (Facts.CallsOpen).
func (g *generation) callsOpen() bool { return g.gate.Load() == nil }

// takeFree returns a callCtx for a request whose caller's Done channel is
// done: preferably the free one already watching done, else the newest
// free one whose hook (if any) could be stopped, else a new one. Called
// with callsMu held.
func (g *generation) takeFree(done <-chan struct{}) *callCtx {
	for i := len(g.free) - 1; i >= 0; i-- {
		if c := g.free[i]; (c.hookDone == done || c.lastDone == done) && done != nil && !c.closed {
			g.dropFree(i)
			return c
		}
	}
	for n := len(g.free); n > 0; n = len(g.free) {
		c := g.free[n-1]
		g.dropFree(n - 1)
		if !c.closed && c.unhook() {
			return c
		}
		// Its caller's context ended while it was free: it is closed, or
		// about to be; drop it.
	}
	return newCallCtx(g)
}

func (g *generation) dropFree(i int) {
	n := len(g.free) - 1
	g.free[i] = g.free[n]
	g.free[n] = nil
	g.free = g.free[:n]
}

// callScope is one request's context and what end releases.
type callScope struct {
	ctx    context.Context
	c      *callCtx // the reuse path
	id     uint64   // otherwise: the registry entry of cancel
	cancel context.CancelFunc
}

// end releases what begin took: the request's callCtx goes back to the
// free list (its caller hook kept) unless it was closed, a context was
// derived from it, or the generation ended.
func (g *generation) end(sc callScope) {
	if c := sc.c; c != nil {
		g.callsMu.Lock()
		defer g.callsMu.Unlock()
		g.inflight.remove(c)
		c.caller = context.Background() // keep no values of the caller's
		if c.closed || c.derived.Load() || g.callsEnded {
			c.unhook()
			return
		}
		if c.hookStop != nil {
			if c.keep {
				c.caller = c.hookCtx // pinned by the hook anyway
			} else {
				c.lastDone = c.hookDone
				if !c.unhook() {
					return // the caller's context is ending: c is closed, or about to be
				}
			}
		}
		g.free = append(g.free, c)
		return
	}
	switch {
	case sc.id != 0:
		g.removeCall(sc.id, sc.cancel)
	case sc.cancel != nil:
		sc.cancel()
	}
}

// reuseContexts reports whether this generation's requests get reused
// contexts (callCtx), deciding once.
func (g *generation) reuseContexts() bool {
	switch g.ctxReuse.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	v := int32(2)
	if callsKeepNoContext(g.tg) {
		v = 1
	}
	g.ctxReuse.Store(v)
	return v == 1
}

// callsKeepNoContext reports whether nothing on tg's connection keeps a
// request's context once the request returned, which reusing a callCtx
// needs: true of the SDK's in-memory connections and of transport.Lines,
// the stdio generations' (each writes and waits on the caller's
// goroutine; what the SDK starts with the context is started only after
// the context ended, and a callCtx that ended is never reused). The SDK's
// Streamable HTTP client keeps the context of a request whose answer is a
// stream in a goroutine of its own, and any other transport is unknown:
// those derive a context per request instead.
func callsKeepNoContext(tg transport.Generation) bool {
	if _, ok := tg.(*transport.MemGen); ok {
		return true
	}
	_, ok := tg.Transport().(interface{ KeepsNoRequestContext() })
	return ok
}

// settle classifies a request's error. sent is false when the request
// certainly never reached the server: the SDK refused to send it because
// the connection had already closed (mcp.ErrConnectionClosed). Only the
// end of the connection proves that: over a peerConn the SDK's error can
// be nothing else; over another connection (Streamable HTTP) it may be
// the server's answer with a closing code, so it proves it only once the
// generation has ended, and is otherwise a sent failure (never replayed,
// never waiting for an end that may not come). A request in flight when
// the connection ended, or a multi-round-trip call whose later round
// could not be sent, gets ErrConnectionLost.
func (g *generation) settle(ctx context.Context, server string, err error) (sent bool, _ error) {
	if err == nil {
		return true, nil
	}
	if !g.peerErrs && g.ctx.Err() == nil && errors.Unwrap(err) == io.EOF && !transportEnding(g.tg) {
		// A connection the attempt could not wrap (Streamable HTTP): the
		// SDK decodes an answer without a result to a bare io.EOF
		// ("calling %q: EOF"), and its connection reads io.EOF only once
		// closed, which comes after the generation ended, or after the
		// transport began to end itself (a sign-in refused, a failed
		// probe: transportEnding). So this is the server's answer, not the
		// connection's end (transport/answer.go).
		err = fmt.Errorf("%w: %w", err, &transport.MalformedAnswerError{Reason: "it has no result (the SDK decoded an empty one)"})
	}
	if errors.Is(err, transport.ErrMalformedAnswer) {
		// The server answered, badly: its fault, sent, never lost (§19).
		return true, fmt.Errorf("mcpkeep: server %q gen %d: %w", server, g.n, err)
	}
	if errors.Is(err, ErrConnectionLost) {
		return true, err
	}
	if errors.Is(err, mcp.ErrConnectionClosed) && (g.peerErrs || g.ctx.Err() != nil) {
		return false, err
	}
	if ctx.Err() == nil && connectionEnded(g, err) {
		err = fmt.Errorf("mcpkeep: server %q gen %d: %w: %w", server, g.n, ErrConnectionLost, err)
		// A generation that ended itself for a sign-in (a 401 or 403 in
		// this very call, say) tells its caller what to do (§22).
		if g.tg != nil {
			if c := signInCause(g.tg, nil); c != nil {
				err = fmt.Errorf("%w (%w)", err, c)
			}
		}
	}
	return true, err
}

// transportEnding reports whether tg's transport began its own teardown
// (transport/http_gen.go, Ending) before the generation ended.
func transportEnding(tg transport.Generation) bool {
	e, ok := tg.(interface{ Ending() bool })
	return ok && e.Ending()
}

// addProgress registers a call's progress handler under a fresh token.
func (g *generation) addProgress(fn func(*mcp.ProgressNotificationParams)) string {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	g.progressSeq++
	tok := "mcpkeep-" + strconv.FormatUint(g.n, 10) + "-" + strconv.FormatUint(g.progressSeq, 10)
	if g.progress == nil {
		g.progress = make(map[string]*progressEntry)
	}
	g.progress[tok] = &progressEntry{fn: fn, seen: make(chan struct{}, 1), complete: make(chan struct{})}
	return tok
}

// progressEntry is one request's progress handler; seen is signalled on
// every delivery.
type progressEntry struct {
	fn   func(*mcp.ProgressNotificationParams)
	seen chan struct{}
	// complete is closed when a notification reached its total.
	complete chan struct{}
	done     bool // complete is closed; guarded by the generation's callsMu
	totaled  bool // a notification named a total; guarded likewise
	// read counts the notifications of the token the connection read
	// (peerConn), handled those delivered; guarded likewise.
	read, handled int
}

// Progress that the server sent before its reply may still be in the
// SDK's notification queue when the reply arrives (responses are not
// queued): a request with a progress handler waits, before it returns,
// until its progress was delivered, so the last step is not lost and
// still comes before the result. Where the generation's connection is a
// peerConn, which counts the progress it reads, the request waits for
// exactly what was read (at most progressDeliverMax, against a host
// handler that blocks): the SDK's queue may lag by any time under load,
// and a 100 ms guess lost the last steps of TestHostilePeers/listen.
// Elsewhere (Streamable HTTP) it waits until its progress reached its
// total, or has been quiet for progressQuiet, at most progressLinger.
const (
	progressQuiet      = 10 * time.Millisecond
	progressLinger     = 100 * time.Millisecond
	progressDeliverMax = 5 * time.Second
)

// progressRead counts a notifications/progress the connection read for
// the live call that owns its token (see progressDeliverMax). One the
// SDK could not decode is not counted: it never reaches a handler.
func (g *generation) progressRead(params json.RawMessage) {
	g.callsMu.Lock()
	none := len(g.progress) == 0
	g.callsMu.Unlock()
	if none {
		return
	}
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if e := g.progress[s]; e != nil {
		e.read++
	}
}

// removeProgress forgets a call's token once its queued progress was
// delivered (see progressDeliverMax): a notification that arrives later
// reaches nobody's call.
func (g *generation) removeProgress(tok string) {
	g.callsMu.Lock()
	e := g.progress[tok]
	g.callsMu.Unlock()
	if e != nil && g.peerErrs {
		g.awaitProgressRead(e)
	} else if e != nil {
		quiet := time.NewTimer(progressQuiet)
		limit := time.NewTimer(progressLinger)
	wait:
		for {
			select {
			case <-e.seen:
				quiet.Reset(progressQuiet)
			case <-e.complete:
				break wait
			case <-quiet.C:
				// A progress with a total that was not reached yet is
				// worth the wait up to the limit; one without is done.
				g.callsMu.Lock()
				totaled := e.totaled
				g.callsMu.Unlock()
				if !totaled {
					break wait
				}
			case <-limit.C:
				break wait
			case <-g.ctx.Done():
				break wait
			}
		}
		quiet.Stop()
		limit.Stop()
	}
	g.callsMu.Lock()
	delete(g.progress, tok)
	g.callsMu.Unlock()
}

// awaitProgressRead waits until every notification the connection read
// for e was delivered to its handler.
// It waits, too, for the log messages the connection read up to now
// (logsDelivered): a per-request log level registers a progress entry
// for this wait alone.
func (g *generation) awaitProgressRead(e *progressEntry) {
	limit := time.NewTimer(progressDeliverMax)
	defer limit.Stop()
	logsTarget := g.logs.read.Load()
	for {
		g.callsMu.Lock()
		caught := e.handled >= e.read
		g.callsMu.Unlock()
		logsCaught, logMoved := g.logs.caughtUp(logsTarget)
		if caught && logsCaught {
			return
		}
		select {
		case <-e.seen: // handled moved
		case <-logMoved: // nil (never ready) once the logs caught up
		case <-limit.C:
			return
		case <-g.ctx.Done():
			return
		}
	}
}

// progressHandler returns the entry of a live call's token, or nil; the
// caller delivers p to e.fn, then reports it with delivered.
func (g *generation) progressHandler(p *mcp.ProgressNotificationParams) *progressEntry {
	s, ok := p.ProgressToken.(string)
	if !ok {
		return nil
	}
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	return g.progress[s]
}

// delivered reports that p reached e's handler: the request's wait for its
// queued progress (removeProgress) goes on only once it has, so a request
// never returns while its last step is still on its way.
func (g *generation) delivered(e *progressEntry, p *mcp.ProgressNotificationParams) {
	defer func() { // after handled moved: a waiter that missed it wakes
		select {
		case e.seen <- struct{}{}:
		default:
		}
	}()
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	e.handled++
	if p.Total > 0 {
		e.totaled = true
	}
	if p.Total > 0 && p.Progress >= p.Total && !e.done {
		e.done = true
		close(e.complete)
	}
}

// openCall is an in-flight request of the non-reuse path: its caller's
// context and the cancel of the context derived from it.
type openCall struct {
	caller context.Context
	cancel context.CancelFunc
}

func (g *generation) addCall(caller context.Context, cancel context.CancelFunc) (uint64, bool) {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.callsEnded {
		return 0, false
	}
	if g.calls == nil {
		g.calls = make(map[uint64]openCall)
	}
	g.callSeq++
	g.calls[g.callSeq] = openCall{caller: caller, cancel: cancel}
	return g.callSeq, true
}

func (g *generation) removeCall(id uint64, cancel context.CancelFunc) {
	g.callsMu.Lock()
	delete(g.calls, id)
	g.callsMu.Unlock()
	cancel()
}

// endCalls ends every in-flight request; later ones fail at once.
func (g *generation) endCalls() {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	g.callsEnded = true
	for c := g.inflight.head; c != nil; c = c.next {
		c.close(context.Canceled)
	}
	for _, c := range g.free {
		c.unhook()
	}
	g.free = nil
	for _, c := range g.calls {
		c.cancel()
	}
}

// serverAnswered reports whether err is the server's JSON-RPC error answer:
// a *jsonrpc.Error that is not one of the SDK's own closing codes (which
// the SDK makes for a connection that ends, and which peerConn keeps a
// server's from matching).
func serverAnswered(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je != nil && !errors.Is(err, mcp.ErrConnectionClosed)
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
// died gets the read loop's own error (io.EOF, or a closed pipe), and the
// write a stdio server stopped taking fails with transport.ErrStalled.
// A server's JSON-RPC error is an answer that arrived, even when the
// generation ended as it was read (docs/design.md §21): the call ran, and
// is neither lost nor replayed.
func connectionEnded(g *generation, err error) bool {
	if serverAnswered(err) {
		return false
	}
	return g.ctx.Err() != nil ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, transport.ErrStalled)
}
