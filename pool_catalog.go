package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Catalog returns the registry of the pool's prompts, resources and
// templates.
func (p *Pool) Catalog() tools.CatalogSink { return p.catalog }

func (p *Pool) lookupCatalog(what string) (tools.CatalogLookuper, error) {
	cat, ok := p.catalog.(tools.CatalogLookuper)
	if !ok {
		return nil, fmt.Errorf("mcpkeep: pool: %s: catalog %T cannot look prompts and resources up", what, p.catalog)
	}
	return cat, nil
}

// ReadResource reads the resource at uri from the server that lists it;
// a URI listed by several servers goes to the first of them in config
// order (a warning is logged once per URI); a URI nobody lists goes to
// the first server whose resource template matches it; otherwise it is
// an error naming the URI (ErrUnknownResource). Outage semantics are
// Call's; the URI is never renamed.
func (p *Pool) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	ps, err := p.resourceServer(uri)
	if err != nil {
		return nil, err
	}
	return ps.sup.ReadResource(ctx, uri, p.defaultOpts(ps, opts))
}

// SubscribeResource subscribes to the resource at uri on the server that
// owns it (routed as ReadResource); the server's supervisor keeps the
// subscription across restarts (Supervisor.SubscribeResource).
func (p *Pool) SubscribeResource(ctx context.Context, uri string) error {
	ps, err := p.resourceServer(uri)
	if err != nil {
		return err
	}
	return ps.sup.SubscribeResource(ctx, uri)
}

// UnsubscribeResource ends a subscription on every server that has it.
func (p *Pool) UnsubscribeResource(ctx context.Context, uri string) error {
	var errs []error
	for _, ps := range p.entries() {
		errs = append(errs, ps.sup.UnsubscribeResource(ctx, uri))
	}
	return errors.Join(errs...)
}

// Complete routes completion/complete by its reference: a prompt by its
// public name (sent to its server under the original name), a resource
// template by the server that registered it (or, for a URI, as
// ReadResource routes it). The argument is passed unchanged.
func (p *Pool) Complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, errors.New("mcpkeep: pool: complete: a reference (ref) is required")
	}
	cat, err := p.lookupCatalog("complete")
	if err != nil {
		return nil, err
	}
	switch params.Ref.Type {
	case "ref/prompt":
		pr, ok := cat.Prompt(params.Ref.Name)
		if !ok {
			return nil, fmt.Errorf("mcpkeep: complete: prompt %q: %w", params.Ref.Name, ErrUnknownPrompt)
		}
		ps, _ := p.entry(pr.Server)
		if ps == nil {
			return nil, fmt.Errorf("mcpkeep: complete: prompt %q: %w (server %q is not running)", params.Ref.Name, ErrUnknownPrompt, pr.Server)
		}
		fwd := *params
		ref := *params.Ref
		ref.Name = pr.Name
		fwd.Ref = &ref
		return ps.sup.Complete(ctx, &fwd, p.defaultOpts(ps, opts))
	case "ref/resource":
		var owners []string
		for _, t := range cat.Templates() {
			if t.URITemplate == params.Ref.URI {
				owners = append(owners, t.Server)
			}
		}
		var ps *poolServer
		if server := p.firstInOrder(owners); server != "" {
			ps, _ = p.entry(server)
		}
		if ps == nil {
			if ps, err = p.resourceServer(params.Ref.URI); err != nil {
				return nil, err
			}
		}
		return ps.sup.Complete(ctx, params, p.defaultOpts(ps, opts))
	}
	return nil, fmt.Errorf("mcpkeep: complete: unknown reference type %q", params.Ref.Type)
}

// SetLoggingLevel sets the log level of every server, and of every server
// that starts later (a restarted generation gets it from its supervisor).
// It returns the servers' errors joined.
func (p *Pool) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := checkLevel(level); err != nil {
		return err
	}
	p.mu.Lock()
	p.mu.level = level
	p.mu.Unlock()
	return p.eachServer(func(ps *poolServer) error { return ps.sup.SetLoggingLevel(ctx, level) })
}

// SetRoots sets the roots every server (also one that starts later) is
// offered; servers that are connected get notifications/roots/list_changed.
func (p *Pool) SetRoots(ctx context.Context, roots []*mcp.Root) error {
	p.mu.Lock()
	p.mu.roots, p.mu.haveRoots = slices.Clone(roots), true
	p.mu.Unlock()
	return p.eachServer(func(ps *poolServer) error { return ps.sup.SetRoots(ctx, roots) })
}

// eachServer runs fn for every server at once and joins the errors: a
// server slow to answer delays no other (docs/design.md §19).
func (p *Pool) eachServer(fn func(*poolServer) error) error {
	servers := p.entries()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, ps := range servers {
		wg.Go(func() { errs[i] = fn(ps) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// entries lists the pool's servers.
func (p *Pool) entries() []*poolServer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*poolServer, 0, len(p.mu.servers))
	for _, ps := range p.mu.servers {
		out = append(out, ps)
	}
	return out
}

// resourceServer routes a URI (see ReadResource).
func (p *Pool) resourceServer(uri string) (*poolServer, error) {
	cat, err := p.lookupCatalog("resource " + uri)
	if err != nil {
		return nil, err
	}
	owners := cat.ResourceOwners(uri)
	if len(owners) > 1 {
		p.warnShared(uri, owners)
	}
	if len(owners) == 0 {
		for _, t := range cat.Templates() {
			if ut := p.template(t.URITemplate); ut != nil && ut.Match(uri) != nil {
				owners = append(owners, t.Server)
			}
		}
	}
	if server := p.firstInOrder(owners); server != "" {
		if ps, _ := p.entry(server); ps != nil {
			return ps, nil
		}
		// Removed by an Apply and still draining: it answers as an outage.
		if old := p.lastRetired(server); old != nil {
			return &poolServer{sup: old}, nil
		}
	}
	return nil, fmt.Errorf("mcpkeep: resource %q: %w", uri, ErrUnknownResource)
}

// firstInOrder returns the server of names that comes first in the
// config's order ("" for none).
func (p *Pool) firstInOrder(names []string) string {
	if len(names) == 0 {
		return ""
	}
	p.mu.Lock()
	order := p.mu.order
	p.mu.Unlock()
	best, bestAt := "", len(order)+1
	for _, n := range names {
		at := slices.Index(order, n)
		if at < 0 {
			at = len(order)
		}
		if at < bestAt || (at == bestAt && n < best) {
			best, bestAt = n, at
		}
	}
	return best
}

// template compiles a URI template once.
func (p *Pool) template(s string) *uritemplate.Template {
	if t, ok := p.templates.Load(s); ok {
		return t.(*uritemplate.Template)
	}
	t, err := uritemplate.New(s)
	if err != nil {
		return nil
	}
	p.templates.Store(s, t)
	return t
}

// warnShared logs, once per URI, that several servers list it.
func (p *Pool) warnShared(uri string, owners []string) {
	if _, seen := p.shared.LoadOrStore(uri, true); seen {
		return
	}
	p.log.Warn("resource listed by several servers", slog.String("uri", uri),
		slog.Any("servers", owners), slog.String("routed_to", p.firstInOrder(owners)))
}

// poolCatalogState is the pool's part of what Catalog routing needs.
type poolCatalogState struct {
	templates sync.Map // URI template → *uritemplate.Template
	shared    sync.Map // URIs already warned about
}
