package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogMirror mirrors the pool's prompts, resources and templates onto
// the proxy's server as the tools mirror does for tools: each atomic swap
// of one kind of one server becomes one batch of Add/Remove calls, which
// the SDK debounces into one list_changed for the host, and an unchanged
// relist emits nothing (the Catalog delivers no change).
type catalogMirror struct {
	srv  *mcp.Server
	pool func() *mcpkeep.Pool
	log  *slog.Logger
	ops  *ops // counts relayed requests; nil counts nothing

	// exposed is what each server has on the proxy's server, by key
	// (prompt public name, URI, URI template) and canonical definition.
	// Owned by apply, which the Catalog calls one change at a time.
	prompts   map[string]map[string]string
	resources map[string]map[string]string
	templates map[string]map[string]string
	// owners counts the servers exposing each URI and template: a URI two
	// servers list is one resource upstream, removed when the last goes.
	uriOwners      map[string]int
	templateOwners map[string]int
}

func newCatalogMirror(srv *mcp.Server, pool func() *mcpkeep.Pool, log *slog.Logger) *catalogMirror {
	return &catalogMirror{srv: srv, pool: pool, log: log,
		prompts: map[string]map[string]string{}, resources: map[string]map[string]string{}, templates: map[string]map[string]string{},
		uriOwners: map[string]int{}, templateOwners: map[string]int{}}
}

func (c *catalogMirror) apply(ch tools.CatalogChange) {
	switch ch.List {
	case tools.KindPrompts:
		next := map[string]string{}
		defs := map[string]tools.Prompt{}
		for _, p := range ch.Prompts {
			next[p.PublicName], defs[p.PublicName] = canonicalJSON(p.Def), p
		}
		added, removed := diff(c.prompts[ch.Server], next)
		if len(removed) > 0 {
			c.srv.RemovePrompts(removed...)
		}
		for _, name := range added {
			p := defs[name]
			def := *p.Def
			def.Name = p.PublicName
			c.srv.AddPrompt(&def, c.promptHandler(p.PublicName))
		}
		setOrDelete(c.prompts, ch.Server, next)
		c.logged(ch, added, removed)
	case tools.KindResources:
		next := map[string]string{}
		defs := map[string]tools.Resource{}
		for _, r := range ch.Resources {
			next[r.URI], defs[r.URI] = canonicalJSON(r.Def), r
		}
		added, removed := diff(c.resources[ch.Server], next)
		var gone []string
		for _, uri := range removed {
			if c.uriOwners[uri]--; c.uriOwners[uri] <= 0 {
				delete(c.uriOwners, uri)
				gone = append(gone, uri)
			}
		}
		if len(gone) > 0 {
			c.srv.RemoveResources(gone...)
		}
		for _, uri := range added {
			if _, changed := c.resources[ch.Server][uri]; !changed {
				c.uriOwners[uri]++
			}
			def := *defs[uri].Def
			c.srv.AddResource(&def, c.readHandler())
		}
		setOrDelete(c.resources, ch.Server, next)
		c.logged(ch, added, removed)
	case tools.KindTemplates:
		next := map[string]string{}
		defs := map[string]tools.Template{}
		for _, t := range ch.Templates {
			next[t.URITemplate], defs[t.URITemplate] = canonicalJSON(t.Def), t
		}
		added, removed := diff(c.templates[ch.Server], next)
		var gone []string
		for _, ut := range removed {
			if c.templateOwners[ut]--; c.templateOwners[ut] <= 0 {
				delete(c.templateOwners, ut)
				gone = append(gone, ut)
			}
		}
		if len(gone) > 0 {
			c.srv.RemoveResourceTemplates(gone...)
		}
		for _, ut := range added {
			if _, changed := c.templates[ch.Server][ut]; !changed {
				c.templateOwners[ut]++
			}
			def := *defs[ut].Def
			c.addTemplate(&def)
		}
		setOrDelete(c.templates, ch.Server, next)
		c.logged(ch, added, removed)
	}
}

// addTemplate exposes a template; the SDK panics on one it cannot parse,
// and one bad template must not take the proxy down.
func (c *catalogMirror) addTemplate(t *mcp.ResourceTemplate) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("resource template not exposed", slog.String("uriTemplate", t.URITemplate), slog.Any("err", r))
		}
	}()
	c.srv.AddResourceTemplate(t, c.readHandler())
}

func (c *catalogMirror) logged(ch tools.CatalogChange, added, removed []string) {
	c.log.Info(ch.List.String()+" changed", slog.String("server", ch.Server), slog.Uint64("gen", ch.Gen),
		slog.String("kind", ch.Kind.String()), slog.Any("added", added), slog.Any("removed", removed))
}

// diff returns the keys new or changed in next, and those gone from old.
func diff(old, next map[string]string) (added, removed []string) {
	for k, v := range next {
		if ov, ok := old[k]; !ok || ov != v {
			added = append(added, k)
		}
	}
	for k := range old {
		if _, ok := next[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func setOrDelete(m map[string]map[string]string, server string, next map[string]string) {
	if len(next) == 0 {
		delete(m, server)
		return
	}
	m[server] = next
}

// promptHandler routes prompts/get to the server's supervisor by public
// name; outage and connection errors are worded as for tool calls.
func (c *catalogMirror) promptHandler(public string) mcp.PromptHandler {
	server, _, _ := strings.Cut(public, "__")
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		start := time.Now()
		res, err := c.pool().GetPrompt(ctx, public, req.Params.Arguments, progressOpts(ctx, req))
		c.ops.observeRequest(server, "prompts/get", start, err)
		if err != nil {
			return nil, c.wireError(err)
		}
		return res, nil
	}
}

// readHandler routes resources/read by URI (the pool picks the server).
func (c *catalogMirror) readHandler() mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		start := time.Now()
		res, err := c.pool().ReadResource(ctx, req.Params.URI, progressOpts(ctx, req))
		c.ops.observeRequest(c.owner(req.Params.URI), "resources/read", start, err)
		if err != nil {
			if errors.Is(err, mcpkeep.ErrUnknownResource) {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil, c.wireError(err)
		}
		return res, nil
	}
}

// wireError passes a server's JSON-RPC error through unchanged and turns
// the proxy's own (an outage, a lost connection) into an internal error
// whose message is what a tool call would say.
func (c *catalogMirror) wireError(err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: describe(c.pool(), err)}
}

// canonicalJSON is a definition's identity for "unchanged".
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// owner names the server a URI is read from, for metrics ("" unknown).
func (c *catalogMirror) owner(uri string) string {
	if cat, ok := c.pool().Catalog().(tools.CatalogLookuper); ok {
		if owners := cat.ResourceOwners(uri); len(owners) > 0 {
			return owners[0]
		}
	}
	return ""
}
