package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostLink is the proxy's side of its hosts: the capabilities the servers
// are told of (over stdio, exactly those the host declared; with --listen,
// sampling, elicitation and roots, since any session may answer), and the
// carrying of each server's requests to a host.
//
// A server's request goes to the host that caused it (docs/design.md §19):
// each host call relayed to a server carries its host session (a legacy
// session and its request's context, or a 2026-07-28 session's bridge) in
// its context, and the supervisor hands the host handlers a context that
// sees the calls in flight when the server's request arrived
// (mcpkeep.CallsInFlight). A legacy session gets it as a request of the
// proxy's own (ServerSession.CreateMessage, Elicit, ListRoots) made on its
// call's context, so over Streamable HTTP it goes out on that call's own
// stream; a 2026-07-28 session gets it as a multi-round-trip input request
// of its tools/call in flight (see bridges). See route for the rest.
type hostLink struct {
	log *slog.Logger
	srv *mcp.Server

	mu     sync.Mutex
	caps   *mcp.ClientCapabilities
	modern bool // the stdio host speaks 2026-07-28

	// ambiguous counts the server requests refused because calls of
	// several host sessions could have caused them (errManyCarriers).
	ambiguous atomic.Uint64

	bridges  bridges
	outboxes outboxes
	updates  updates
}

// learn records the host's capabilities at its initialize (or first
// request on 2026-07-28).
func (h *hostLink) learn(caps *mcp.ClientCapabilities, version string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	h.caps = caps
	h.modern = version >= "2026-07-28"
}

func (h *hostLink) capabilities() *mcp.ClientCapabilities {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.caps == nil {
		return &mcp.ClientCapabilities{}
	}
	return h.caps
}

// isModern reports whether a host session speaks 2026-07-28.
func isModern(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// carrierKey marks the context of a host's request relayed to a server:
// a server request made while it is in flight goes back to that host
// (docs/design.md §19).
type carrierKey struct{}

// via is what carrierKey holds: a legacy session with its request's
// context (whose stream carries what is sent on it), or a bridge.
type via struct {
	session *mcp.ServerSession
	ctx     context.Context
	bridge  *bridge
	task    *taskCarrier // a task's call (tasks_input.go)
	// caps are the declared capabilities of an HTTP fast call's host
	// (httpfast.go), whose bridge no session holds until one adopts it.
	caps *mcp.ClientCapabilities
}

// withCarrier marks ctx as carried by v; a legacy session's request is
// ctx itself.
func withCarrier(ctx context.Context, v via) context.Context {
	if v.session != nil && v.ctx == nil {
		v.ctx = ctx
	}
	return context.WithValue(ctx, carrierKey{}, v)
}

// host is the host session behind v, nil when a bridge has no round yet.
func (v via) host() *mcp.ServerSession {
	if v.bridge != nil {
		return v.bridge.host()
	}
	return v.session
}

// ended reports whether v's call finished (or its host cancelled it).
func (v via) ended() bool {
	if v.bridge != nil {
		select {
		case <-v.bridge.closed:
			return true
		default:
			return v.bridge.ctx.Err() != nil
		}
	}
	return v.ctx == nil || v.ctx.Err() != nil
}

// A hostAsk is the capability a server's request needs of the host.
type hostAsk int

const (
	askSampling hostAsk = iota
	askElicitation
	askRoots
)

func (a hostAsk) String() string {
	return [...]string{"sampling", "elicitation", "roots"}[a]
}

// declares reports whether ss declared what a asks for at its initialize.
func declares(ss *mcp.ServerSession, a hostAsk) bool {
	p := ss.InitializeParams()
	if p == nil {
		return false
	}
	return declaresCaps(p.Capabilities, a)
}

// declaresCaps reports whether capabilities c declare what a needs.
func declaresCaps(c *mcp.ClientCapabilities, a hostAsk) bool {
	if c == nil {
		return false
	}
	switch a {
	case askSampling:
		return c.Sampling != nil
	case askElicitation:
		return c.Elicitation != nil
	}
	return c.RootsV2 != nil || c.Roots.ListChanged
}

// route picks where a request of server goes: a legacy session with the
// context to send it on (v.session, v.ctx), or a 2026-07-28 session's
// bridge (v.bridge).
//
//   - The calls in flight when the request arrived decide, never a count
//     of sessions: the request's context names the one carried call in
//     flight (a 2026-07-28 server's input request comes on its call's
//     own context), else CallsInFlight lists several. A call that
//     finished and a session that closed count for nothing. Several
//     calls of one session: it takes the request (a bridge: the oldest),
//     unless it did not declare the capability (the server gets
//     errCarrierCannot; no other session is asked). Calls of several
//     sessions: the server gets errManyCarriers, counted.
//   - With no carried call in flight (roots after a restart, say), the
//     only live legacy session that declared the capability takes it;
//     otherwise the server gets errNoCarrier.
func (h *hostLink) route(ctx context.Context, a hostAsk) (via, error) {
	var cands []via
	if v, ok := ctx.Value(carrierKey{}).(via); ok {
		cands = append(cands, v)
	} else {
		for _, call := range mcpkeep.CallsInFlight(ctx) {
			if v, ok := call.Value(carrierKey{}).(via); ok {
				cands = append(cands, v)
			}
		}
	}
	if v, ok, err := routeTask(cands, a); ok {
		return v, err // a task's call carries it (docs/design.md §25)
	}
	// A session that ended (its host went away mid-call, its handler not
	// yet returned) carries nothing and makes nothing ambiguous.
	live := map[*mcp.ServerSession]bool{}
	for ss := range h.srv.Sessions() {
		live[ss] = true
	}
	var (
		pick   via
		fast   via // an HTTP fast call's, no session yet (httpfast.go)
		hosts  = map[*mcp.ServerSession]bool{}
		reason error
	)
	for _, v := range cands {
		ss := v.host()
		switch {
		case ss == nil && v.caps != nil && v.bridge != nil && !v.ended():
			fast = v
		case ss == nil || !live[ss]:
			reason = errCarrierClosed
		case v.ended():
			reason = errCarrierEnded
		default:
			hosts[ss] = true
			if pick.host() == nil || (v.bridge != nil && pick.bridge != nil && v.bridge.seq < pick.bridge.seq) {
				pick = v
			}
		}
	}
	if fast.bridge != nil {
		// Its request's own session, as on the typed path.
		switch {
		case len(hosts) > 0:
			h.ambiguous.Add(1)
			return via{}, errManyCarriers
		case !declaresCaps(fast.caps, a):
			return via{}, fmt.Errorf("%w: %s", errCarrierCannot, a)
		}
		return fast, nil
	}
	switch {
	case len(hosts) > 1:
		// A session that could not answer still makes it a tie: the
		// request may be its call's, and another host must not be asked
		// in its place.
		h.ambiguous.Add(1)
		return via{}, errManyCarriers
	case len(hosts) == 1 && !declares(pick.host(), a):
		return via{}, fmt.Errorf("%w: %s", errCarrierCannot, a)
	case len(hosts) == 1:
		return pick, nil
	case reason != nil:
		return via{}, reason
	}
	var only *mcp.ServerSession
	n := 0
	for ss := range live {
		if !isModern(ss) && declares(ss, a) {
			only = ss
			n++
		}
	}
	if n == 1 {
		return via{session: only}, nil
	}
	return via{}, errNoCarrier
}

// handlers are the HostHandlers every supervisor gets: one per capability
// the servers are told of, none for the others.
func (h *hostLink) handlers(relay *logRelay) mcpkeep.HostHandlers {
	caps := h.capabilities()
	hh := mcpkeep.HostHandlers{
		LoggingMessage: relay.relay,
		ResourceUpdated: func(server string, p *mcp.ResourceUpdatedNotificationParams) {
			h.updates.push(p)
		},
		SubscriptionDropped: func(server, uri string, err error) {
			h.log.Warn("subscription dropped", slog.String("server", server), slog.String("uri", uri), slog.Any("err", err))
		},
	}
	if caps.Sampling != nil {
		hh.CreateMessage = h.createMessage
	}
	if caps.Elicitation != nil {
		hh.Elicit = h.elicit
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		hh.ListRoots = h.listRoots
	}
	return hh
}

var (
	errNoCarrier     = errors.New("mcpkeep: no host request to this server is in flight that could carry the server's request, and no one host session could take it (a host on protocol 2026-07-28 takes one only inside its own tools/call, prompts/get or resources/read)")
	errManyCarriers  = errors.New("mcpkeep: calls of several host sessions to this server were in flight when it asked: which host should answer is ambiguous (over stdio a server's request does not say which call it belongs to)")
	errCarrierClosed = errors.New("mcpkeep: the host session whose call caused this request has closed")
	errCarrierEnded  = errors.New("mcpkeep: the host's call that caused this request has finished")
	errCarrierCannot = errors.New("mcpkeep: the host session whose call caused this request did not declare the capability")
)

// send is the context to send a server's request to v's session on: the
// values of the session's own request (over Streamable HTTP its stream
// carries the server's request, §16), ended when either the server's
// request or the session's request ends.
func (v via) send(ctx context.Context) (context.Context, context.CancelFunc) {
	if v.ctx == nil {
		return ctx, func() {}
	}
	c, cancel := context.WithCancel(valuesOf{Context: ctx, values: v.ctx})
	stop := context.AfterFunc(v.ctx, cancel)
	return c, func() { stop(); cancel() }
}

// valuesOf is a context's lifetime with another's values.
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any { return c.values.Value(key) }

func (h *hostLink) createMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	v, err := h.route(ctx, askSampling)
	if err != nil {
		return nil, err
	}
	if v.task != nil {
		return askTask[mcp.CreateMessageResult](ctx, v, "sampling/createMessage", p)
	}
	if v.bridge == nil {
		ctx, cancel := v.send(ctx)
		defer cancel()
		return v.session.CreateMessage(ctx, p)
	}
	res, err := h.bridges.ask(ctx, v.bridge, p)
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		out := &mcp.CreateMessageResult{Meta: r.Meta, Model: r.Model, Role: r.Role, StopReason: r.StopReason}
		if len(r.Content) > 0 {
			out.Content = r.Content[0]
		}
		return out, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered sampling with %T", res)
}

func (h *hostLink) elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	v, err := h.route(ctx, askElicitation)
	if err != nil {
		return nil, err
	}
	if v.task != nil {
		return askTask[mcp.ElicitResult](ctx, v, "elicitation/create", p)
	}
	if v.bridge == nil {
		ctx, cancel := v.send(ctx)
		defer cancel()
		return v.session.Elicit(ctx, p)
	}
	res, err := h.bridges.ask(ctx, v.bridge, p)
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.ElicitResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered elicitation with %T", res)
}

func (h *hostLink) listRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	v, err := h.route(ctx, askRoots)
	if err != nil {
		return nil, err
	}
	if v.task != nil {
		return askTask[mcp.ListRootsResult](ctx, v, "roots/list", &mcp.ListRootsParams{})
	}
	if v.bridge == nil {
		ctx, cancel := v.send(ctx)
		defer cancel()
		return v.session.ListRoots(ctx, &mcp.ListRootsParams{})
	}
	res, err := h.bridges.ask(ctx, v.bridge, &mcp.ListRootsParams{})
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.ListRootsResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered roots/list with %T", res)
}

// instructions combines the servers' instructions, each under its name.
func instructions(pool *mcpkeep.Pool) string {
	var b strings.Builder
	for _, s := range pool.States() {
		sup, ok := pool.Supervisor(s.Server)
		if !ok {
			continue
		}
		info := sup.ServerInfo()
		if info == nil || strings.TrimSpace(info.Instructions) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s\n\n%s", s.Server, strings.TrimSpace(info.Instructions))
	}
	return b.String()
}

// bridgeComeBack is how long a bridge waits for the host to come back
// with the answers to its input requests before the server's call is
// cancelled; bridgeComeBackElicit when one of them asks a person.
const (
	bridgeComeBack       = 2 * time.Minute
	bridgeComeBackElicit = 10 * time.Minute
	// bridgeGather: a legacy server's concurrent requests arrive within
	// microseconds of each other; the host, asking a person or a model,
	// does not notice the wait (bridge.go gatherInto).
	bridgeGather = 50 * time.Millisecond
)
