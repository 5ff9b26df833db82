package mcpkeep

import (
	"encoding/json"

	"context"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HostHandlers are the host's side of what a server asks of it or tells
// it. Every field is optional; a nil handler means the host does not offer
// that capability, and the server is never told of it (no sampling
// handler, no sampling capability).
//
// A request handler's context also sees the calls in flight over the
// server's connection when the request arrived: its Value(key) falls back
// to the one call whose context has a value for key, and CallsInFlight
// lists them all (related.go), so a host serving several callers routes
// the request to the one that caused it.
//
// Handlers are called on the SDK's goroutines of the generation that
// received the request or notification, and only while that generation is
// the supervisor's current one: a request of a generation that ended is
// refused (the server gets an error) and a notification is dropped, so
// neither reaches the host. A handler that panics is recovered; for a
// request the panic becomes the error the server receives.
type HostHandlers struct {
	// CreateMessage answers sampling/createMessage.
	CreateMessage func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// CreateMessageWithTools answers sampling/createMessage with tool use
	// (the server is told sampling.tools); not together with CreateMessage.
	CreateMessageWithTools func(ctx context.Context, server string, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit answers elicitation/create.
	Elicit func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots answers roots/list when the host keeps its roots itself
	// instead of calling SetRoots (on protocol 2026-07-28 also the roots
	// input requests of a multi round trip, which the supervisor fulfils).
	ListRoots func(ctx context.Context, server string) (*mcp.ListRootsResult, error)
	// LoggingMessage receives notifications/message.
	LoggingMessage func(server string, p *mcp.LoggingMessageParams)
	// ResourceUpdated receives notifications/resources/updated of the
	// resources the host subscribed to (SubscribeResource).
	ResourceUpdated func(server string, p *mcp.ResourceUpdatedNotificationParams)
	// Progress receives notifications/progress whose token belongs to no
	// call of this supervisor's (a call's own progress goes to its
	// CallOptions.Progress).
	Progress func(server string, p *mcp.ProgressNotificationParams)
	// SubscriptionDropped is told of a resource subscription that a new
	// generation's server refused when the supervisor re-established it:
	// the subscription is forgotten (and logged at warn).
	SubscriptionDropped func(server, uri string, err error)
}

// ErrStaleGeneration is what a server gets for a request that reached a
// generation the supervisor has already ended.
var ErrStaleGeneration = errors.New("mcpkeep: request from a generation that has ended")

// errHandlerPanic wraps a host handler's recovered panic.
var errHandlerPanic = errors.New("mcpkeep: host handler panicked")

// newClient builds generation g's mcp.Client: its handlers are bound to g,
// so what a stale generation asks or tells never reaches the host, and its
// capabilities are exactly what the host provides.
func (s *Supervisor) newClient(g *generation, roots []*mcp.Root, haveRoots bool) *mcp.Client {
	h := &s.opts.Host
	caps := &mcp.ClientCapabilities{}
	if haveRoots || h.ListRoots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	opts := &mcp.ClientOptions{
		Capabilities: caps,
		// The supervisor runs the multi round trip itself (mrtr.go).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			// The SDK runs this on the connection's notification queue:
			// hand it to the loop and return; never call back into the SDK.
			s.sendOrAbandon(g.ctx, message{kind: mToolsChanged, gen: g.n})
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.sendOrAbandon(g.ctx, message{kind: mCatalogChanged, gen: g.n, kinds: kindPrompts})
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.sendOrAbandon(g.ctx, message{kind: mCatalogChanged, gen: g.n, kinds: kindResources})
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.onProgress(g, req.Params)
		},
	}
	if h.CreateMessage != nil {
		opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return hostRequest(s, g, func() (*mcp.CreateMessageResult, error) {
				return h.CreateMessage(g.related(ctx), s.opts.Name, req.Params)
			})
		}
	}
	if h.CreateMessageWithTools != nil {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return hostRequest(s, g, func() (*mcp.CreateMessageWithToolsResult, error) {
				return h.CreateMessageWithTools(g.related(ctx), s.opts.Name, req.Params)
			})
		}
	}
	if h.Elicit != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return hostRequest(s, g, func() (*mcp.ElicitResult, error) { return h.Elicit(g.related(ctx), s.opts.Name, req.Params) })
		}
	}
	if h.LoggingMessage != nil {
		g.logs.on = true
		opts.LoggingMessageHandler = func(_ context.Context, req *mcp.LoggingMessageRequest) {
			defer g.logs.handledOne()
			hostNotify(s, g, func() { h.LoggingMessage(s.opts.Name, req.Params) })
		}
	}
	if h.ResourceUpdated != nil {
		opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params == nil || !s.subscribed(req.Params.URI) {
				return // unsubscribed (on 2026-07-28 the stream stays open)
			}
			hostNotify(s, g, func() { h.ResourceUpdated(s.opts.Name, req.Params) })
		}
	}
	c := mcp.NewClient(s.opts.Client, opts)
	if h.ListRoots != nil {
		c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "roots/list" {
					return next(ctx, method, req)
				}
				res, err := hostRequest(s, g, func() (*mcp.ListRootsResult, error) { return h.ListRoots(g.related(ctx), s.opts.Name) })
				if err != nil {
					return nil, err // not a typed nil in the interface
				}
				return res, nil
			}
		})
	}
	if h.Elicit != nil {
		// The server's request reaches the host as the server sent it: the
		// SDK's client would judge its schema first (and refuse what it
		// does not know, such as SEP-1330's titled multi-select), which
		// is the host's to judge (docs/design.md §13).
		c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				er, ok := req.(*mcp.ElicitRequest)
				if method != "elicitation/create" || !ok || er.Params == nil {
					return next(ctx, method, req)
				}
				res, err := hostRequest(s, g, func() (*mcp.ElicitResult, error) { return h.Elicit(g.related(ctx), s.opts.Name, er.Params) })
				if err != nil {
					return nil, err
				}
				applyElicitDefaults(er.Params, res)
				return res, nil
			}
		})
	}
	if len(roots) > 0 {
		c.AddRoots(roots...) // no session yet: nothing is notified
	}
	// On 2026-07-28 a subscription is a subscriptions/listen that the
	// SDK's Subscribe does not wait for: its acknowledgement (or its
	// failure) is watched here, so reconcile learns whether it was taken.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil {
					n := p.Notifications
					if !n.ToolsListChanged && !n.PromptsListChanged && !n.ResourcesListChanged {
						g.subAcked(n.ResourceSubscriptions)
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	c.AddSendingMiddleware(s.multiRoundTrip(g))
	c.AddSendingMiddleware(s.traceSending(g)) // docs/design.md §27
	offered := offeredCaps(caps, h.CreateMessage != nil || h.CreateMessageWithTools != nil, h.Elicit != nil)
	c.AddSendingMiddleware(hostCapsSending(offered)) // hostcaps.go
	c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "subscriptions/listen" && err != nil && ctx.Err() == nil {
				if p, ok := req.GetParams().(*mcp.SubscriptionsListenParams); ok && p != nil && p.Notifications != nil {
					g.subFailed(p.Notifications.ResourceSubscriptions, err)
				}
			}
			return res, err
		}
	})
	return c
}

// hostRequest runs a host handler for a request of generation g: refused
// when g has ended, a panic turned into an error.
func hostRequest[R any](s *Supervisor, g *generation, fn func() (R, error)) (res R, err error) {
	if g.ctx.Err() != nil {
		s.dropped.Add(1)
		return res, ErrStaleGeneration
	}
	defer func() {
		if p := recover(); p != nil {
			var zero R
			res, err = zero, fmt.Errorf("%w: %v", errHandlerPanic, p)
		}
	}()
	return fn()
}

// hostNotify delivers a notification of generation g to the host, unless
// g has ended; a panic is recovered and logged.
func hostNotify(s *Supervisor, g *generation, fn func()) {
	if g.ctx.Err() != nil {
		s.dropped.Add(1)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Warn("host handler panicked", "server", s.opts.Name, "gen", g.n, "panic", fmt.Sprint(p))
		}
	}()
	fn()
}

// onProgress routes a progress notification to the call that owns its
// token, else to the host's Progress handler.
func (s *Supervisor) onProgress(g *generation, p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	if e := g.progressHandler(p); e != nil {
		hostNotify(s, g, func() { e.fn(p) })
		g.delivered(e, p)
		return
	}
	if h := s.opts.Host.Progress; h != nil {
		hostNotify(s, g, func() { h(s.opts.Name, p) })
	}
}

// applyElicitDefaults fills what an accepted answer left out with the
// schema's defaults (SEP-1034), as the SDK's client does; a schema it
// cannot resolve is left to the host and the server, unjudged.
func applyElicitDefaults(p *mcp.ElicitParams, res *mcp.ElicitResult) {
	if res == nil || res.Action != "accept" || p.RequestedSchema == nil {
		return
	}
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return
	}
	var schema jsonschema.Schema
	if json.Unmarshal(b, &schema) != nil {
		return
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return
	}
	if res.Content == nil {
		res.Content = map[string]any{}
	}
	_ = resolved.ApplyDefaults(&res.Content)
}
