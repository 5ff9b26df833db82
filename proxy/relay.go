package proxy

import (
	"context"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the proxy relays to its hosts on its own: the servers' log
// messages and progress, through each host session's outbox (outbox.go).

// logRelay sends the servers' log messages to the host with the logger
// named after the server ("<server>" or "<server>/<logger>"). The SDK
// drops those below the level the host set.
type logRelay struct {
	srv  *mcp.Server
	host *hostLink
}

// relay sends to every host session; each session's own level (its
// logging/setLevel) decides whether it gets the message. A 2026-07-28
// session whose request to that server is in flight gets it inside that
// request instead, at the request's level (its _meta), once.
func (r *logRelay) relay(server string, p *mcp.LoggingMessageParams) {
	q := *p
	q.Logger = server
	if p.Logger != "" {
		q.Logger = server + "/" + p.Logger
	}
	done := map[*mcp.ServerSession]bool{}
	for _, b := range r.host.bridges.of(server) {
		if ss, rctx := b.round(); ss != nil && !done[ss] {
			done[ss] = true
			r.host.outboxes.push(ss, false, func(sendCtx context.Context) {
				ctx, cancel := context.WithCancel(rctx) // the round's request carries it
				defer cancel()
				stop := context.AfterFunc(sendCtx, cancel)
				defer stop()
				_ = ss.Log(ctx, &q)
			})
		}
	}
	for ss := range r.srv.Sessions() {
		if !done[ss] {
			r.host.outboxes.push(ss, false, func(ctx context.Context) { _ = ss.Log(ctx, &q) })
		}
	}
}

// progressOpts relays a server's progress for one host request to the
// host under the host's own token, and passes on the request's own log
// level (2026-07-28); nil when the host asked for neither.
func (h *hostLink) progressOpts(ctx context.Context, req mcp.Request) *mcpkeep.CallOptions {
	relay, level := h.progressRelay(ctx, req), requestLevel(req)
	if relay == nil && level == "" {
		return nil
	}
	return &mcpkeep.CallOptions{Progress: relay, LogLevel: level}
}

// requestLevel is the log level a 2026-07-28 host put on its request.
func requestLevel(req mcp.Request) mcp.LoggingLevel {
	m, ok := req.GetParams().(interface{ GetMeta() map[string]any })
	if !ok {
		return ""
	}
	lv, _ := m.GetMeta()[mcp.MetaKeyLogLevel].(string)
	return mcp.LoggingLevel(lv)
}

// progressRelay queues the server's progress for the host's request in
// the host session's outbox (the server's notification path never waits
// for a host); the request flushes the outbox before its result.
func (h *hostLink) progressRelay(ctx context.Context, req mcp.Request) func(*mcp.ProgressNotificationParams) {
	pt, ok := req.GetParams().(interface{ GetProgressToken() any })
	if !ok {
		return nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return h.progressTo(ctx, ss, pt.GetProgressToken())
}

// progressTo relays a server's progress to session ss under the host's
// token tok; nil when there is no token to relay under.
func (h *hostLink) progressTo(ctx context.Context, ss *mcp.ServerSession, tok any) func(*mcp.ProgressNotificationParams) {
	if tok == nil || ss == nil {
		return nil
	}
	return func(p *mcp.ProgressNotificationParams) {
		out := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message}
		h.outboxes.push(ss, true, func(sendCtx context.Context) {
			ctx, cancel := context.WithCancel(ctx) // the request's: its stream carries it
			defer cancel()
			stop := context.AfterFunc(sendCtx, cancel)
			defer stop()
			_ = ss.NotifyProgress(ctx, out)
		})
	}
}

// flushBound bounds how long a result waits for its session's outbox.
const flushBound = time.Second

// flush lets what the host's session has queued (its request's progress
// and log messages) go out before the request's result.
func (h *hostLink) flush(ctx context.Context, ss *mcp.ServerSession) {
	if ss == nil || !h.outboxes.owes(ss) {
		return // nothing to wait for: no timer (a context and its timer per relayed call, on the hop)
	}
	ctx, cancel := context.WithTimeout(ctx, flushBound)
	defer cancel()
	h.outboxes.flush(ctx, ss)
}
