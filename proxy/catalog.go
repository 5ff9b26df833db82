package proxy

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
	*relayPath

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

func newCatalogMirror(rp *relayPath) *catalogMirror {
	return &catalogMirror{relayPath: rp,
		prompts: map[string]map[string]string{}, resources: map[string]map[string]string{}, templates: map[string]map[string]string{},
		uriOwners: map[string]int{}, templateOwners: map[string]int{}}
}

func (c *catalogMirror) apply(ch tools.CatalogChange) {
	defer c.changed.Store(time.Now().UnixNano())
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
		keys := make([]string, len(ch.Resources))
		for i, r := range ch.Resources {
			keys[i] = r.URI
		}
		c.applyShared(ch, c.resources, c.uriOwners, keys, func(i int) any { return ch.Resources[i].Def },
			func(gone []string) { c.srv.RemoveResources(gone...) },
			func(i int) error {
				def := *ch.Resources[i].Def
				return guarded(func() { c.srv.AddResource(&def, c.readHandler()) })
			})
	case tools.KindTemplates:
		keys := make([]string, len(ch.Templates))
		for i, t := range ch.Templates {
			keys[i] = t.URITemplate
		}
		c.applyShared(ch, c.templates, c.templateOwners, keys, func(i int) any { return ch.Templates[i].Def },
			func(gone []string) { c.srv.RemoveResourceTemplates(gone...) },
			func(i int) error {
				def := *ch.Templates[i].Def
				return guarded(func() { c.srv.AddResourceTemplate(&def, c.readHandler()) })
			})
	}
}

// applyShared mirrors one swap of a kind whose keys two servers may share
// (resource URIs, URI templates): exposed is what each server has,
// owners counts the servers exposing each key, so a key leaves upstream
// only with its last server. def and add take an index into keys; an item
// add refuses is left out (and its old definition, if it had one, goes).
func (c *catalogMirror) applyShared(ch tools.CatalogChange, exposed map[string]map[string]string, owners map[string]int,
	keys []string, def func(int) any, remove func([]string), add func(int) error) {
	next := map[string]string{}
	index := map[string]int{}
	for i, k := range keys {
		next[k], index[k] = canonicalJSON(def(i)), i
	}
	added, removed := diff(exposed[ch.Server], next)
	var gone []string
	disown := func(k string) {
		if owners[k]--; owners[k] <= 0 {
			delete(owners, k)
			gone = append(gone, k)
		}
	}
	for _, k := range removed {
		disown(k)
	}
	if len(gone) > 0 {
		remove(gone)
		gone = nil
	}
	for _, k := range added {
		_, changed := exposed[ch.Server][k]
		if err := add(index[k]); err != nil {
			c.log.Error(ch.List.String()+" item not exposed", slog.String("server", ch.Server), slog.String("key", k), slog.Any("err", err))
			delete(next, k)
			if changed {
				disown(k)
			}
			continue
		}
		if !changed {
			owners[k]++
		}
	}
	if len(gone) > 0 {
		remove(gone)
	}
	setOrDelete(exposed, ch.Server, next)
	c.logged(ch, added, removed)
}

// guarded runs an SDK call that panics on server data it cannot accept:
// one bad item must not take the proxy down (docs/design.md §19).
func guarded(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("refused by the SDK: %v", r)
		}
	}()
	fn()
	return nil
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
		if isModern(req.Session) {
			return c.promptBridged(ctx, req, server, public) // bridge_catalog.go
		}
		ctx, done := c.track(ctx)
		defer done()
		start := time.Now()
		res, err := c.pool().GetPrompt(ctx, public, req.Params.Arguments, c.host.progressOpts(ctx, req))
		c.observe(server, "prompts/get", start, err)
		c.host.flush(ctx, req.Session)
		if err != nil {
			return nil, c.wireError(err)
		}
		return res, nil
	}
}

// readHandler routes resources/read by URI (the pool picks the server).
func (c *catalogMirror) readHandler() mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if isModern(req.Session) {
			return c.readBridged(ctx, req, c.owner(req.Params.URI)) // bridge_catalog.go
		}
		ctx, done := c.track(ctx)
		defer done()
		start := time.Now()
		res, err := c.pool().ReadResource(ctx, req.Params.URI, c.host.progressOpts(ctx, req))
		c.observe(c.owner(req.Params.URI), "resources/read", start, err)
		c.host.flush(ctx, req.Session)
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
