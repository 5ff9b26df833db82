package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 host's prompts/get and resources/read may be asked for
// input as its tools/call is (docs/design.md §24): the server's requests
// during the request reach the host as input requests of its result, by
// the same bridge, its state bound to the method and the prompt's public
// name or the resource's URI.

// bridgedCall is one round of a host's prompts/get or resources/read.
type bridgedCall struct {
	server string
	// name is what the request state binds: the method and the public
	// prompt name or the URI.
	name    string
	state   string
	answers mcp.InputResponseMap
	caps    *mcp.ClientCapabilities // the host's, of this request
	track   func(context.Context) (context.Context, func())
	observe func(err error)
	// run is the request to the server, on the bridge's context.
	run func(ctx context.Context, opts *mcpkeep.CallOptions) (mcp.Result, error)
}

// bridgedRound runs one round of c for the host's request req: the
// server's final result or error, or (reqs non-nil) the input requests to
// ask the host and the state to come back with.
func (h *hostLink) bridgedRound(ctx context.Context, req mcp.Request, c bridgedCall) (res mcp.Result, reqs mcp.InputRequestMap, state string, err error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	bs := &h.bridges
	var b *bridge
	relay, level := h.progressRelay(ctx, req), requestLevel(req)
	if c.state != "" {
		var werr *jsonrpc.Error
		if b, werr = bs.resume(c.state, c.name, bridgeSession(ss, req.GetExtra())); werr != nil {
			return nil, nil, "", werr
		}
		b.setRound(ctx, ss, relay, level)
		b.answer(c.answers)
	} else {
		b = bs.open(c.server, c.name, bridgeSession(ss, req.GetExtra()))
		b.setRound(ctx, ss, relay, level)
		opts := &mcpkeep.CallOptions{LogLevel: level}
		if relay != nil || opts.LogLevel != "" {
			opts.Progress = b.relay
		}
		bctx := mcpkeep.WithHostCapabilities(mcpkeep.TraceFrom(b.ctx, ctx), c.caps)
		ctx, done := c.track(withCarrier(bctx, via{bridge: b}))
		go func() {
			defer done()
			res, err := c.run(ctx, opts)
			c.observe(err)
			b.done <- outcome{other: res, err: err}
		}()
	}
	out, final := bs.round(ctx, b)
	h.flush(ctx, ss)
	if !final {
		return nil, out.res.InputRequests, out.res.RequestState, nil
	}
	if out.err == nil && out.other == nil {
		out.err = errNoResult
	}
	return out.other, nil, "", out.err
}

// promptBridged is a 2026-07-28 host's prompts/get of public through a
// bridge.
func (c *catalogMirror) promptBridged(ctx context.Context, req *mcp.GetPromptRequest, server, public string) (*mcp.GetPromptResult, error) {
	start := time.Now()
	res, reqs, state, err := c.host.bridgedRound(ctx, req, bridgedCall{
		server: server, name: "prompts/get " + public, state: req.Params.RequestState, answers: req.Params.InputResponses,
		caps:  req.ClientCapabilities(),
		track: c.track, observe: func(err error) { c.observe(server, "prompts/get", start, err) },
		run: func(ctx context.Context, opts *mcpkeep.CallOptions) (mcp.Result, error) {
			res, err := c.pool().GetPrompt(ctx, public, req.Params.Arguments, opts)
			if err != nil || res == nil {
				return nil, err
			}
			return res, nil
		}})
	switch {
	case err != nil:
		return nil, c.wireError(err)
	case reqs != nil:
		return &mcp.GetPromptResult{InputRequests: reqs, RequestState: state}, nil
	}
	if r, ok := res.(*mcp.GetPromptResult); ok {
		return r, nil
	}
	return nil, c.wireError(fmt.Errorf("mcpkeep: prompts/get ended with a %T", res))
}

// readBridged is a 2026-07-28 host's resources/read of uri (of server)
// through a bridge.
func (c *catalogMirror) readBridged(ctx context.Context, req *mcp.ReadResourceRequest, server string) (*mcp.ReadResourceResult, error) {
	start := time.Now()
	uri := req.Params.URI
	res, reqs, state, err := c.host.bridgedRound(ctx, req, bridgedCall{
		server: server, name: "resources/read " + uri, state: req.Params.RequestState, answers: req.Params.InputResponses,
		caps:  req.ClientCapabilities(),
		track: c.track, observe: func(err error) { c.observe(server, "resources/read", start, err) },
		run: func(ctx context.Context, opts *mcpkeep.CallOptions) (mcp.Result, error) {
			res, err := c.pool().ReadResource(ctx, uri, opts)
			if err != nil || res == nil {
				return nil, err
			}
			return res, nil
		}})
	switch {
	case errors.Is(err, mcpkeep.ErrUnknownResource):
		return nil, mcp.ResourceNotFoundError(uri)
	case err != nil:
		return nil, c.wireError(err)
	case reqs != nil:
		return &mcp.ReadResourceResult{InputRequests: reqs, RequestState: state}, nil
	}
	if r, ok := res.(*mcp.ReadResourceResult); ok {
		return r, nil
	}
	return nil, c.wireError(fmt.Errorf("mcpkeep: resources/read ended with a %T", res))
}
