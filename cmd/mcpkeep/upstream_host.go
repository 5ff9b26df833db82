package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostLink is the proxy's side of the host: the host's session and the
// capabilities it declared, which decide what every server is told (a
// server sees exactly the sampling, elicitation and roots capabilities
// the host has), and the carrying of each server's requests to the host.
//
// A host on a protocol before 2026-07-28 gets a server's request as a
// request of the proxy's own (ServerSession.CreateMessage, Elicit,
// ListRoots). A host on 2026-07-28 cannot be asked outside a request: the
// request of the server goes, as a multi-round-trip input request, to the
// host's tools/call to that server that is in flight, when exactly one is
// (see bridges); otherwise the server gets an error saying why.
type hostLink struct {
	log *slog.Logger

	mu      sync.Mutex
	session *mcp.ServerSession
	caps    *mcp.ClientCapabilities
	modern  bool // the host speaks 2026-07-28 (no requests outside a request)

	bridges bridges
}

// learn records the host's session and capabilities at its initialize
// (or first server/discover).
func (h *hostLink) learn(ss *mcp.ServerSession, caps *mcp.ClientCapabilities, version string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.session = ss
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	h.caps = caps
	h.modern = version >= "2026-07-28"
}

func (h *hostLink) state() (*mcp.ServerSession, *mcp.ClientCapabilities, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session, h.caps, h.modern
}

// handlers are the HostHandlers every supervisor gets: one per capability
// the host declared, none for the others.
func (h *hostLink) handlers(relay *logRelay, srv *mcp.Server) mcpkeep.HostHandlers {
	_, caps, _ := h.state()
	hh := mcpkeep.HostHandlers{
		LoggingMessage: relay.relay,
		ResourceUpdated: func(server string, p *mcp.ResourceUpdatedNotificationParams) {
			_ = srv.ResourceUpdated(context.Background(), p)
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

var errNoCarrier = errors.New("the host speaks protocol 2026-07-28, which takes a server's request only inside a request of the host's: none (or more than one) of its calls to this server is in flight")

func (h *hostLink) createMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss, _, modern := h.state()
	if !modern {
		return ss.CreateMessage(ctx, p)
	}
	res, err := h.bridges.ask(ctx, server, p)
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
	ss, _, modern := h.state()
	if !modern {
		return ss.Elicit(ctx, p)
	}
	res, err := h.bridges.ask(ctx, server, p)
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.ElicitResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered elicitation with %T", res)
}

func (h *hostLink) listRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	ss, _, modern := h.state()
	if !modern {
		return ss.ListRoots(ctx, &mcp.ListRootsParams{})
	}
	res, err := h.bridges.ask(ctx, server, &mcp.ListRootsParams{})
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.ListRootsResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("mcpkeep: the host answered roots/list with %T", res)
}

// logRelay sends the servers' log messages to the host with the logger
// named after the server ("<server>" or "<server>/<logger>"). The SDK
// drops those below the level the host set.
type logRelay struct{ host *hostLink }

func (r *logRelay) relay(server string, p *mcp.LoggingMessageParams) {
	ss, _, _ := r.host.state()
	if ss == nil {
		return
	}
	q := *p
	q.Logger = server
	if p.Logger != "" {
		q.Logger = server + "/" + p.Logger
	}
	_ = ss.Log(context.Background(), &q)
}

// progressOpts relays a server's progress for one host request to the
// host under the host's own token; nil when the host asked for none.
func progressOpts(ctx context.Context, req mcp.Request) *mcpkeep.CallOptions {
	relay := progressRelay(ctx, req)
	if relay == nil {
		return nil
	}
	return &mcpkeep.CallOptions{Progress: relay}
}

func progressRelay(ctx context.Context, req mcp.Request) func(*mcp.ProgressNotificationParams) {
	pt, ok := req.GetParams().(interface{ GetProgressToken() any })
	if !ok {
		return nil
	}
	tok := pt.GetProgressToken()
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if tok == nil || ss == nil {
		return nil
	}
	return func(p *mcp.ProgressNotificationParams) {
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message,
		})
	}
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

// bridgeIdle is how long a bridge waits for the host to come back with
// the answers to its input requests before the server's call is cancelled.
const bridgeIdle = 2 * time.Minute
