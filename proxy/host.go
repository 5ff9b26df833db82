package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostLink is the proxy's side of its hosts: the capabilities the servers
// are told of (over stdio, exactly those the host declared; with --listen,
// sampling, elicitation and roots, since any session may answer), and the
// carrying of each server's requests to a host.
//
// A server's request goes to the host session whose request to that
// server is in flight, when exactly one is; with none in flight, to the
// only session if there is one. A session on a protocol before 2026-07-28
// gets it as a request of the proxy's own (ServerSession.CreateMessage,
// Elicit, ListRoots). A session on 2026-07-28 cannot be asked outside a
// request: it gets it as a multi-round-trip input request of its tools/call
// in flight (see bridges). Otherwise the server gets an error saying why.
type hostLink struct {
	log *slog.Logger
	srv *mcp.Server

	mu       sync.Mutex
	caps     *mcp.ClientCapabilities
	modern   bool                  // the stdio host speaks 2026-07-28
	inflight map[string][]*carrier // server → legacy sessions' requests in flight

	bridges  bridges
	outboxes outboxes
	updates  updates
}

// carrier is a legacy session's request to a server, in flight.
type carrier struct{ session *mcp.ServerSession }

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

// carry registers a legacy session's request to server for its duration.
func (h *hostLink) carry(server string, ss *mcp.ServerSession) (done func()) {
	if ss == nil || isModern(ss) {
		return func() {}
	}
	c := &carrier{session: ss}
	h.mu.Lock()
	if h.inflight == nil {
		h.inflight = map[string][]*carrier{}
	}
	h.inflight[server] = append(h.inflight[server], c)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		list := h.inflight[server]
		for i, x := range list {
			if x == c {
				h.inflight[server] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(h.inflight[server]) == 0 {
			delete(h.inflight, server)
		}
	}
}

// carrierKey marks the context of a host's request relayed to a server:
// a server request made inside it (a 2026-07-28 server's input request,
// which the supervisor fulfils on the call's context) goes back to that
// host, whatever else is in flight (docs/design.md §19).
type carrierKey struct{}

// via is what carrierKey holds: a legacy session, or a bridge.
type via struct {
	session *mcp.ServerSession
	bridge  *bridge
}

// withCarrier marks ctx as carried by v.
func withCarrier(ctx context.Context, v via) context.Context {
	return context.WithValue(ctx, carrierKey{}, v)
}

// route picks where a request of server goes: a legacy session (ss), or a
// 2026-07-28 session's bridge (b), or neither (errNoCarrier). The request's
// own context names its host when the request came inside a host's call;
// otherwise the host sessions with a request to server in flight decide:
// one session (however many of its requests are in flight) takes it.
func (h *hostLink) route(ctx context.Context, server string) (ss *mcp.ServerSession, b *bridge, err error) {
	if v, ok := ctx.Value(carrierKey{}).(via); ok {
		return v.session, v.bridge, nil
	}
	// A session that ended (its host went away mid-call, its handler
	// not yet returned) carries nothing and makes nothing ambiguous.
	live := map[*mcp.ServerSession]bool{}
	for ss := range h.srv.Sessions() {
		live[ss] = true
	}
	h.mu.Lock()
	legacy := slices.DeleteFunc(slices.Clone(h.inflight[server]), func(c *carrier) bool { return !live[c.session] })
	h.mu.Unlock()
	bridged := slices.DeleteFunc(h.bridges.of(server), func(b *bridge) bool { return !live[b.host()] })
	sessions := map[*mcp.ServerSession]bool{}
	for _, c := range legacy {
		sessions[c.session] = true
	}
	for _, br := range bridged {
		sessions[br.host()] = true
	}
	switch {
	case len(sessions) > 1:
		return nil, nil, errManyCarriers
	case len(legacy) > 0:
		return legacy[0].session, nil, nil
	case len(bridged) > 0:
		return nil, slices.MinFunc(bridged, func(x, y *bridge) int { return cmp.Compare(x.seq, y.seq) }), nil
	}
	if all := slices.Collect(h.srv.Sessions()); len(all) == 1 && !isModern(all[0]) {
		return all[0], nil, nil
	}
	return nil, nil, errNoCarrier
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
	errNoCarrier    = errors.New("mcpkeep: no host request to this server is in flight that could carry the server's request (a host on protocol 2026-07-28 takes one only inside its own tools/call)")
	errManyCarriers = errors.New("mcpkeep: requests of several host sessions to this server are in flight: which host should answer is ambiguous")
)

func (h *hostLink) createMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss, b, err := h.route(ctx, server)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return ss.CreateMessage(ctx, p)
	}
	res, err := h.bridges.ask(ctx, b, p)
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
	ss, b, err := h.route(ctx, server)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return ss.Elicit(ctx, p)
	}
	res, err := h.bridges.ask(ctx, b, p)
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.ElicitResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered elicitation with %T", res)
}

func (h *hostLink) listRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	ss, b, err := h.route(ctx, server)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return ss.ListRoots(ctx, &mcp.ListRootsParams{})
	}
	res, err := h.bridges.ask(ctx, b, &mcp.ListRootsParams{})
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
)
