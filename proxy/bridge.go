package proxy

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridges carry a server's requests (sampling, elicitation, roots) to a
// host on protocol 2026-07-28, which can be asked only inside a request of
// its own, by multi round trip: the proxy answers the host's tools/call
// with the server's request as an input request, the host answers and
// calls again with the answer and the request state, and the proxy hands
// the answer to the server, whose call goes on. One bridge spans one
// host tools/call across its rounds; the server's call behind it runs on
// the bridge's own context, cancelled when the host cancels a round, when
// the call completes, or when the host does not come back with its
// answers in time (docs/design.md §19: no timer runs while the host waits
// for the call itself, which may run for hours).
type bridges struct {
	// base is the context every bridge's server call derives from: the
	// proxy's, which Shutdown cancels.
	base context.Context
	// comeBack and comeBackElicit bound the host's return with answers
	// (zero: bridgeComeBack, bridgeComeBackElicit).
	comeBack, comeBackElicit time.Duration
	// gather is how long a round waits for a legacy server's next
	// request after its last (zero: bridgeGather; see gatherInto).
	gather time.Duration

	// seal seals the bridges' requestState (state.go); nil: one with a
	// random key, made at first use.
	seal *stateSealer

	mu       sync.Mutex
	seq      uint64
	byID     map[string]*bridge
	byServer map[string]map[*bridge]bool
}

type bridge struct {
	id, server, tool string
	opener           *mcp.ServerSession // the host's session that opened it: only it continues
	seq              uint64             // order of opening
	ctx              context.Context
	cancel           context.CancelFunc
	asks             chan *ask
	done             chan outcome
	closed           chan struct{}
	// late, when set, is a fast call's first round not yet under way
	// (fast.go: the server's call runs on the host call's goroutine):
	// the first of an input request and the host's end starts it
	// (goLate), or the call's result takes it back.
	late  atomic.Pointer[func()]
	ended atomic.Bool // close ran

	mu      sync.Mutex
	pending map[string]*ask // input request id → the server's request waiting for it
	// held are the host's answers to a 2026-07-28 server's round asked
	// all at once (see ask) whose handler has not been called yet; expect
	// are the keys of that round.
	held     map[string]mcp.InputResponse
	expect   map[string]bool
	progress func(*mcp.ProgressNotificationParams)
	// session and ctx are the host's current round (its log level rides
	// on ctx: notifications of the round are sent with it).
	session  *mcp.ServerSession
	roundCtx context.Context
	level    mcp.LoggingLevel // the round's own level ("" when it has none)
	idle     *time.Timer      // made when first armed (armIdle)
	inputs   uint64           // input request ids handed out
	// rounds counts the input-required answers given; answered is the
	// last round whose continuation was taken; digest is the round-1
	// answer's (state.go).
	rounds, answered uint64
	digest           string
}

// ask is one request of a server for the host. A 2026-07-28 server's
// input request has its key and its round's other input requests
// (mcpkeep.InputRequestOf); a legacy server's request has neither.
type ask struct {
	req   mcp.InputRequest
	key   string
	round mcp.InputRequestMap
	reply chan askReply
}

type askReply struct {
	res mcp.InputResponse
	err error
}

// outcome is the result of the server's call behind a bridge: typed, or
// as the server sent it (raw, from the fast path).
type outcome struct {
	res *mcp.CallToolResult
	raw json.RawMessage
	// other is a prompts/get's or resources/read's result (bridge_catalog.go).
	other mcp.Result
	err   error
}

// typed is the outcome's result in the SDK's types.
func (o outcome) typed() (*mcp.CallToolResult, error) {
	if o.err != nil || o.res != nil || o.raw == nil {
		return o.res, o.err
	}
	// The SDK's client's own decode (UnmarshalJSON runs its decoder).
	var res mcp.CallToolResult
	if err := res.UnmarshalJSON(o.raw); err != nil {
		// Worded as the SDK's client words it on the typed path.
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	return &res, nil
}

var errBridgeClosed = errors.New("mcpkeep: the host's request that carried this one ended")

// open starts a bridge for a host call to tool (its public name) of
// server, made by the host of session ss.
func (bs *bridges) open(server, tool string, ss *mcp.ServerSession) *bridge {
	b := bs.openFast(server, tool, ss)
	bs.mu.Lock()
	bs.listLocked(b)
	bs.mu.Unlock()
	return b
}

// openFast is open for the fast path's call (fast.go), whose first round
// has no log level of its own (relay.go finds a round's bridges by their
// server only for that): most bridges end with their first round, and
// what only a second round needs (an id, the idle timer, the indexes) is
// made when the first input request is (register), not per call
// (docs/design.md §24, the hop).
func (bs *bridges) openFast(server, tool string, ss *mcp.ServerSession) *bridge {
	bs.mu.Lock()
	bs.seq++
	seq := bs.seq
	bs.mu.Unlock()
	ctx, cancel := context.WithCancel(cmp.Or(bs.base, context.Background()))
	return &bridge{seq: seq, server: server, tool: tool, opener: ss, ctx: ctx, cancel: cancel,
		asks: make(chan *ask, 8), done: make(chan outcome, 1), closed: make(chan struct{})}
}

// listLocked indexes b by its server; bs.mu is held.
func (bs *bridges) listLocked(b *bridge) {
	if bs.byServer == nil {
		bs.byServer = map[string]map[*bridge]bool{}
	}
	if bs.byServer[b.server] == nil {
		bs.byServer[b.server] = map[*bridge]bool{}
	}
	bs.byServer[b.server][b] = true
}

// register gives b its id and indexes it, once, before its first
// requestState names it (unless it ended already).
func (bs *bridges) register(b *bridge) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b.id != "" || b.ended.Load() {
		return
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	b.id = hex.EncodeToString(id[:])
	if bs.byID == nil {
		bs.byID = map[string]*bridge{}
	}
	bs.byID[b.id] = b
	bs.listLocked(b)
}

// armIdle (re)starts b's idle timer: the host owes answers within d.
func (bs *bridges) armIdle(b *bridge, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idle == nil {
		b.idle = time.AfterFunc(d, func() { bs.close(b) })
		return
	}
	b.idle.Reset(d)
}

// stopIdle stops b's idle timer, if it has one.
func (b *bridge) stopIdle() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idle != nil {
		b.idle.Stop()
	}
}

// sealer is bs's stateSealer.
func (bs *bridges) sealer() *stateSealer {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.seal == nil {
		bs.seal = newStateSealer(nil)
	}
	return bs.seal
}

// resume returns the bridge a host's continuation (raw, its
// requestState, for tool by the host of ss) answers, once: or the
// host's error saying why the state is refused (state.go).
func (bs *bridges) resume(raw, tool string, ss *mcp.ServerSession) (*bridge, *jsonrpc.Error) {
	st, werr := bs.sealer().open(raw)
	if werr != nil {
		return nil, werr
	}
	bs.mu.Lock()
	b := bs.byID[st.Bridge]
	bs.mu.Unlock()
	switch {
	case b == nil:
		return nil, badState("its call ended (answered, cancelled, or not come back to in time)")
	case ss != b.opener:
		// A host on stdio or on the HTTP front's stateful session
		// continues on the session it called on. A bridge opened by a
		// stateless request (opener nil) is bound to no session: each
		// such request is a session of its own (docs/design.md §24);
		// the seal, the owner, the round's single use and the expiry
		// still hold.
		return nil, badState("it was issued to another host session")
	case st.Server != b.server || st.Tool != b.tool || st.Tool != tool:
		return nil, badState(fmt.Sprintf("it continues a call of %q, not of %q", st.Tool, tool))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case st.Digest != b.digest:
		return nil, badState("it continues another exchange")
	case st.Round != b.rounds || b.answered >= st.Round:
		return nil, badState(fmt.Sprintf("round %d was answered already (replayed)", st.Round))
	}
	b.answered = st.Round
	return b, nil
}

// close ends b: its server call is cancelled and its waiting requests fail.
func (bs *bridges) close(b *bridge) {
	if !b.ended.CompareAndSwap(false, true) {
		return
	}
	bs.mu.Lock()
	if b.id != "" {
		delete(bs.byID, b.id)
	}
	delete(bs.byServer[b.server], b)
	if len(bs.byServer[b.server]) == 0 {
		delete(bs.byServer, b.server)
	}
	bs.mu.Unlock()
	b.stopIdle()
	b.cancel()
	close(b.closed)
}

// of lists the bridges of host calls to server in flight.
func (bs *bridges) of(server string) []*bridge {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	out := make([]*bridge, 0, len(bs.byServer[server]))
	for b := range bs.byServer[server] {
		out = append(out, b)
	}
	return out
}

// ask carries req from a server to the host through bridge b and waits
// for the host's answer.
//
// A 2026-07-28 server's round of input requests reaches the host handlers
// one by one (the supervisor fulfils them in turn), but the host is asked
// for the whole round at once, under the server's own keys (the spec's
// scenarios check both): the first handler's ask carries the round, and
// the host's answers to the others are held for their handlers, which
// then take them without another round (docs/design.md §24).
func (bs *bridges) ask(ctx context.Context, b *bridge, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{req: req, reply: make(chan askReply, 1)}
	if key, round, ok := mcpkeep.InputRequestOf(ctx); ok && round[key] != nil {
		a.key, a.round = key, round
		if res, ok := b.take(key); ok {
			return res, nil
		}
	}
	b.goLate() // a round must be under way to take a
	select {
	case b.asks <- a:
	case <-b.closed:
		return nil, errBridgeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.reply:
		return r.res, r.err
	case <-b.closed:
		return nil, errBridgeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// goLate starts the first round of a fast call, once, unless its result
// took it back (fast.go).
func (b *bridge) goLate() {
	if f := b.late.Swap(nil); f != nil {
		(*f)()
	}
}

// round is one round of the host's call: it waits for the server's call
// to finish (the final result) or for requests of the server's (an
// input-required result), or for the host to cancel.
func (bs *bridges) round(ctx context.Context, b *bridge) (outcome, bool) {
	b.stopIdle() // the host is here: it waits for us now, for as long as the call runs
	select {
	case <-b.closed:
		// Closed under the host (not come back in time, Shutdown): its
		// call was cancelled; nothing will come.
		return outcome{err: errBridgeClosed}, true
	case out := <-b.done:
		bs.close(b)
		return out, true
	case a := <-b.asks:
		reqs := mcp.InputRequestMap{}
		b.park(a, reqs)
		bs.gatherInto(b, a, reqs)
		within := bs.comeBackWithin(reqs)
		bs.armIdle(b, within)
		return outcome{res: &mcp.CallToolResult{InputRequests: reqs, RequestState: bs.state(b, reqs, within)}}, false
	case <-ctx.Done():
		bs.close(b)
		return outcome{err: ctx.Err()}, true
	}
}

// gatherInto adds to reqs the server's requests that come with first. A
// legacy server's SDK fulfils a round of input requests of its own tool
// by sending them all at once, as concurrent requests that say nothing
// of each other: the host is asked for all that arrive within the gather
// window of the one before (the round would otherwise ask for the first
// and the rest in later rounds, which the host cannot tell from a server
// asking in turn). A 2026-07-28 server's ask carries its whole round, so
// only what has already arrived joins it.
func (bs *bridges) gatherInto(b *bridge, first *ask, reqs mcp.InputRequestMap) {
	window := cmp.Or(bs.gather, bridgeGather)
	if first.round != nil {
		window = 0
	}
	var quiet *time.Timer
	var quietC <-chan time.Time
	if window > 0 {
		quiet = time.NewTimer(window)
		defer quiet.Stop()
		quietC = quiet.C
	}
	for {
		select {
		case a := <-b.asks:
			b.park(a, reqs)
			if quiet != nil {
				quiet.Reset(window)
			}
			continue
		default:
		}
		if quiet == nil {
			return
		}
		select {
		case a := <-b.asks:
			b.park(a, reqs)
			quiet.Reset(window)
		case <-quietC:
			return
		case <-b.closed:
			return
		}
	}
}

// state is the sealed requestState of b's next round, asking reqs, good
// for within.
func (bs *bridges) state(b *bridge, reqs mcp.InputRequestMap, within time.Duration) string {
	sealer := bs.sealer()
	bs.register(b)
	b.mu.Lock()
	b.rounds++
	if b.rounds == 1 {
		b.digest = digest(reqs)
	}
	st := sealedState{Bridge: b.id, Server: b.server, Tool: b.tool, Round: b.rounds, Digest: b.digest,
		Expiry: sealer.expiryAfter(within)}
	b.mu.Unlock()
	return sealer.seal(st)
}

// comeBackWithin is how long the host may take to come back with the
// answers to reqs: longer when a person is asked (an elicitation).
func (bs *bridges) comeBackWithin(reqs mcp.InputRequestMap) time.Duration {
	for _, r := range reqs {
		if _, ok := r.(*mcp.ElicitParams); ok {
			return cmp.Or(bs.comeBackElicit, bridgeComeBackElicit)
		}
	}
	return cmp.Or(bs.comeBack, bridgeComeBack)
}

// park adds a's request to the host's round reqs and keeps a waiting for
// its answer: a legacy server's under a key of the bridge's, a 2026-07-28
// server's under the server's own key, with the rest of its round (whose
// answers the host gives now and their handlers take later).
func (b *bridge) park(a *ask, reqs mcp.InputRequestMap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.round == nil {
		b.inputs++
		id := "input-" + strconv.FormatUint(b.inputs, 10)
		if b.pending == nil {
			b.pending = map[string]*ask{}
		}
		b.pending[id] = a
		reqs[id] = a.req
		return
	}
	b.held, b.expect = nil, map[string]bool{}
	for k, r := range a.round {
		// Never ask the host for what it did not declare: that one's
		// handler gets errCarrierCannot when its turn comes.
		if k != a.key && !declaresInput(b.session, r) {
			continue
		}
		b.expect[k] = true
		reqs[k] = r
	}
	if b.pending == nil {
		b.pending = map[string]*ask{}
	}
	b.pending[a.key] = a
}

// declaresInput reports whether ss declared the capability r needs.
func declaresInput(ss *mcp.ServerSession, r mcp.InputRequest) bool {
	if ss == nil {
		return false
	}
	switch r.(type) {
	case *mcp.ElicitParams:
		return declares(ss, askElicitation)
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return declares(ss, askSampling)
	case *mcp.ListRootsParams:
		return declares(ss, askRoots)
	}
	return false
}

// take returns the held answer to the input request key, once.
func (b *bridge) take(key string) (mcp.InputResponse, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res, ok := b.held[key]
	delete(b.held, key)
	return res, ok
}

// answer hands the host's answers to the server's waiting requests, and
// holds those to the rest of a 2026-07-28 server's round.
func (b *bridge) answer(resps mcp.InputResponseMap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, res := range resps {
		if a, ok := b.pending[id]; ok {
			delete(b.pending, id)
			a.reply <- askReply{res: res}
		} else if b.expect[id] {
			if b.held == nil {
				b.held = map[string]mcp.InputResponse{}
			}
			b.held[id] = res
		}
	}
	b.expect = nil
}

// setRound points the server's progress and log messages at the host's
// current round.
func (b *bridge) setRound(ctx context.Context, ss *mcp.ServerSession, fn func(*mcp.ProgressNotificationParams), level mcp.LoggingLevel) {
	b.mu.Lock()
	b.progress, b.session, b.roundCtx, b.level = fn, ss, ctx, level
	b.mu.Unlock()
}

// round returns the current round's session and context when the round
// carries a log level of its own.
func (b *bridge) round() (*mcp.ServerSession, context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.level == "" {
		return nil, nil
	}
	return b.session, b.roundCtx
}

func (b *bridge) relay(p *mcp.ProgressNotificationParams) {
	b.mu.Lock()
	fn := b.progress
	b.mu.Unlock()
	if fn != nil {
		fn(p)
	}
}

// host is the session of the bridge's current round.
func (b *bridge) host() *mcp.ServerSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session
}
