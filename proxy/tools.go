package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream mirrors the pool's tool registry onto the proxy's own MCP
// server, the one the host talks to. It is the proxy's tools.Sink in
// effect: it follows the Set's change feed, so each atomic swap of a
// server's tools becomes one batch of AddTool/RemoveTools, which the SDK
// debounces (10 ms) into one tools/list_changed for the host. A swap to an
// identical list emits no change at all, so a server that recovers with
// the same tools never makes the host's list flap.
type upstream struct {
	*relayPath

	mu      sync.Mutex
	exposed map[string]map[string]tools.Tool // server → public name → tool

	handoffs handoffs // the fast path's calls handed back to the handler

	twins *twins // 2026-07-28 hosts' twin processes (twin.go); nil: none
}

func newUpstream(rp *relayPath) *upstream {
	return &upstream{relayPath: rp, exposed: map[string]map[string]tools.Tool{}}
}

// relayPath is what the tools and catalog mirrors share: the front they
// mirror onto, the pool their handlers call, the host link, and how a
// relayed request is counted and tracked.
type relayPath struct {
	srv  *mcp.Server
	pool func() *mcpkeep.Pool
	host *hostLink
	log  *slog.Logger
	// observe counts a relayed request; track registers one in flight
	// (see Server.track).
	observe func(server, method string, start time.Time, err error)
	track   func(context.Context) (context.Context, func())
	// changed is when a mirror last changed the front's lists (UnixNano):
	// the SDK announces them list_changed notificationDelay later.
	changed atomic.Int64
}

// newRelayPath counts and tracks nothing (a mirror without a Server:
// tests); Server sets both.
func newRelayPath(srv *mcp.Server, pool func() *mcpkeep.Pool, host *hostLink, log *slog.Logger) *relayPath {
	return &relayPath{srv: srv, pool: pool, host: host, log: log,
		observe: func(string, string, time.Time, error) {}, track: untracked}
}

// apply mirrors one change. The Set delivers changes one at a time, in
// order, on a supervisor's goroutine: it must stay quick.
func (u *upstream) apply(ch tools.Change) {
	u.mu.Lock()
	defer u.mu.Unlock()
	defer u.changed.Store(time.Now().UnixNano())
	old := u.exposed[ch.Server]
	next := make(map[string]tools.Tool, len(ch.Tools))
	for _, t := range ch.Tools {
		next[t.PublicName] = t
	}
	var removed, added []string
	for name := range old {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		u.srv.RemoveTools(removed...)
	}
	var toAdd []tools.Tool
	for _, t := range ch.Tools {
		if o, ok := old[t.PublicName]; ok && sameTool(o, t) {
			continue
		}
		toAdd = append(toAdd, t)
	}
	errs := u.addAll(toAdd)
	for i, t := range toAdd {
		if err := errs[i]; err != nil {
			u.log.Error("tool not exposed", slog.String("server", ch.Server), slog.String("tool", t.PublicName), slog.Any("err", err))
			delete(next, t.PublicName)
			if _, had := old[t.PublicName]; had {
				// The old definition must not stay exposed untracked.
				u.srv.RemoveTools(t.PublicName)
				removed = append(removed, t.PublicName)
			}
			continue
		}
		added = append(added, t.PublicName)
	}
	if len(next) == 0 {
		delete(u.exposed, ch.Server)
	} else {
		u.exposed[ch.Server] = next
	}
	slices.Sort(removed)
	u.log.Info("tools changed", slog.String("server", ch.Server), slog.Uint64("gen", ch.Gen),
		slog.String("kind", ch.Kind.String()), slog.Any("added", added), slog.Any("removed", removed),
		slog.Int("tools", len(next)))
}

// addAll exposes ts, on several goroutines when there are many: the SDK's
// AddTool checks each tool's schema by encoding and decoding it (about
// 50 µs a tool, most of a warm start of many servers: docs/design.md §20),
// and it is safe to call concurrently. The order of the adds does not
// matter: the SDK keeps its tools by name and announces them once.
func (u *upstream) addAll(ts []tools.Tool) []error {
	errs := make([]error, len(ts))
	workers := min(runtime.GOMAXPROCS(0), len(ts)/addBatch)
	if workers <= 1 {
		for i, t := range ts {
			errs[i] = u.add(t)
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ts); i = int(next.Add(1) - 1) {
				errs[i] = u.add(ts[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// addBatch is the fewest tools per goroutine addAll starts.
const addBatch = 8

// add exposes t. The SDK panics on a schema it cannot accept (an input
// schema that is not an object); one bad tool must not take the proxy
// down, so that becomes an error.
func (u *upstream) add(t tools.Tool) (err error) {
	mt := &mcp.Tool{
		Name: t.PublicName, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, Annotations: t.Annotations,
	}
	if len(t.OutputSchema) > 0 {
		mt.OutputSchema = t.OutputSchema
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	u.srv.AddTool(mt, u.handler(t.PublicName))
	return nil
}

func sameTool(a, b tools.Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema) &&
		reflect.DeepEqual(a.Annotations, b.Annotations)
}

// handler routes a host's call to the server's supervisor. Failures of
// the connection become tool results with isError, worded for the model
// and the human reading over its shoulder; errors of the server itself
// (JSON-RPC errors) pass through unchanged.
//
// A host on protocol 2026-07-28 gets a server's requests to it (sampling,
// elicitation, roots) made during the call as input requests of the
// call's result, and comes back with the answers (see bridges).
func (u *upstream) handler(public string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if h, ok := u.handoffs.take(req.Params.Meta); ok {
			if h.bridge != nil {
				return u.adopt(ctx, req, h) // an HTTP fast call in flight (httpfast.go)
			}
			return h.res, h.err // the fast path's call, handed back (fast.go)
		}
		var args any
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		pool := u.pool()
		server := u.serverOf(public)
		if !isModern(req.Session) {
			ctx, done := u.track(withCarrier(ctx, via{session: req.Session}))
			defer done()
			start := time.Now()
			res, err := pool.Call(ctx, public, args, u.host.progressOpts(ctx, req))
			u.observe(server, "tools/call", start, err)
			u.host.flush(ctx, req.Session)
			return u.result(unaskedTyped(server, public, res, err)) // tasks_relay_unasked.go
		}
		bs := &u.host.bridges
		var b *bridge
		relay, level := u.host.progressRelay(ctx, req), requestLevel(req)
		if st := req.Params.RequestState; st != "" {
			var werr *jsonrpc.Error
			if b, werr = bs.resume(st, public, bridgeSession(req.Session, req.Extra)); werr != nil {
				return nil, werr
			}
			b.setRound(ctx, req.Session, relay, level)
			b.answer(req.Params.InputResponses)
		} else {
			b = bs.open(server, public, bridgeSession(req.Session, req.Extra))
			// The round is set before the server's call starts: its first
			// progress may come at once.
			b.setRound(ctx, req.Session, relay, level)
			// A request with a progress handler waits, before it returns,
			// for what the server sent just before its reply (progress,
			// and the log messages of a per-request level): only a host
			// that asked for either pays that wait.
			opts := &mcpkeep.CallOptions{LogLevel: level}
			if relay != nil || opts.LogLevel != "" {
				opts.Progress = b.relay
			}
			// The server is told the host's capabilities of this request
			// (docs/design.md §24).
			bctx := mcpkeep.WithHostCapabilities(mcpkeep.TraceFrom(b.ctx, ctx), req.ClientCapabilities())
			ctx, done := u.track(withCarrier(bctx, via{bridge: b}))
			go func() {
				defer done()
				start := time.Now()
				res, err := u.callModern(ctx, pool, server, public, args, opts)
				u.observe(server, "tools/call", start, err)
				b.done <- outcome{res: res, err: err}
			}()
		}
		out, final := bs.round(ctx, b)
		u.host.flush(ctx, req.Session)
		res, err := out.typed()
		if !final {
			return res, nil
		}
		return u.result(unaskedTyped(server, public, res, err)) // tasks_relay_unasked.go
	}
}

// result turns a pool call's outcome into the host's: failures of the
// connection become tool results with isError, worded for the model and
// the human reading over its shoulder; errors of the server itself
// (JSON-RPC errors) pass through unchanged.
func (u *upstream) result(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err == nil && res == nil {
		// Never a nil result to the SDK's server: for a 2026-07-28 host it
		// panics on one (docs/design.md §19). The connection judges
		// answers first (transport.CheckAnswer); this is the last guard.
		err = errNoResult
	}
	if err == nil {
		return res, nil
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return nil, wire
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: describe(u.pool(), err)}}}, nil
}

// errNoResult: a call's outcome had neither a result nor an error.
var errNoResult = fmt.Errorf("mcpkeep: the call ended without a result: %w", transport.ErrMalformedAnswer)

// describe explains a failed request: which server, in which state, and
// when the next retry is due.
func describe(pool *mcpkeep.Pool, err error) string {
	var nc *mcpkeep.NotConnectedError
	switch {
	case errors.As(err, &nc):
		msg := fmt.Sprintf("mcpkeep: server %q is not connected (%s", nc.Server, nc.State)
		if sup, ok := pool.Supervisor(nc.Server); ok {
			s := sup.State()
			msg += fmt.Sprintf(", retry %d of %d", s.Attempt, s.MaxAttempts)
		}
		if !nc.NextRetry.IsZero() {
			msg += fmt.Sprintf(", next retry in %v", max(time.Until(nc.NextRetry).Round(time.Millisecond), 0))
		}
		msg += ")"
		switch nc.State {
		case fsm.Exhausted:
			msg += "; it gave up: a SIGHUP to mcpkeep retries it"
		case fsm.Connecting, fsm.BackingOff, fsm.Lost:
			msg += "; try again shortly"
		}
		if nc.LastErr != nil {
			msg += ". Last error: " + nc.LastErr.Error()
		}
		return msg
	case errors.Is(err, mcpkeep.ErrConnectionLost):
		return "mcpkeep: the connection to the server was lost during the call; it was not retried and may or may not have taken effect: " + err.Error()
	}
	return err.Error()
}

// serverOf names the server of a public tool name: the one that
// registered it, else the name's server part.
func (u *upstream) serverOf(public string) string {
	if lk, ok := u.pool().Sink().(tools.Lookuper); ok {
		if server, _, ok := lk.Lookup(public); ok {
			return server
		}
	}
	server, _, _ := strings.Cut(public, "__")
	return server
}

// exposedBy returns the server whose tool public is exposed, if it is.
// exposedTool is exposedBy with the tool.
func (u *upstream) exposedTool(public string) (tools.Tool, string, bool) {
	server := u.serverOf(public)
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.exposed[server][public]
	return t, server, ok
}

// adopt makes req's session the host of an HTTP fast call's bridge whose
// server asked the host for input (or whose host went) and runs its first
// round, as the typed path runs it (handler).
func (u *upstream) adopt(ctx context.Context, req *mcp.CallToolRequest, h handoff) (*mcp.CallToolResult, error) {
	b := h.bridge
	bs := &u.host.bridges
	b.setRound(ctx, req.Session, u.host.progressRelay(ctx, req), requestLevel(req))
	out, final := bs.round(ctx, b)
	u.host.flush(ctx, req.Session)
	res, err := out.typed()
	if h.endTrace != nil {
		// The span the fast path started ends with the round it handed
		// over (docs/design.md §27), its outcome as the server gave it.
		terr := out.err
		if terr == nil && out.raw == nil && res != nil && res.IsError {
			terr = mcpkeep.ErrToolResult // a typed outcome (a raw one is read by endTrace)
		}
		h.endTrace(out.raw, terr)
	}
	if !final {
		return res, nil
	}
	return u.result(unaskedTyped(b.server, b.tool, res, err)) // tasks_relay_unasked.go
}

func (u *upstream) exposedBy(public string) (string, bool) {
	server := u.serverOf(public)
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.exposed[server][public]
	return server, ok
}

// untracked is track for a mirror used without a Server (tests).
func untracked(ctx context.Context) (context.Context, func()) { return ctx, func() {} }
