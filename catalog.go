package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"

	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// listKinds is a set of the lists a server offers: what one sync lists,
// what a list_changed marks dirty. Resources and their templates change
// together (one notification covers both).
type listKinds uint8

const (
	kindTools listKinds = 1 << iota
	kindPrompts
	kindResources
)

// lowest returns the first kind of k (the next to sync), or 0.
func (k listKinds) lowest() listKinds { return k & -k }

// offered returns the kinds a server advertises.
func offered(cs *mcp.ClientSession) listKinds {
	k := kindTools
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return k
	}
	if res.Capabilities.Prompts != nil {
		k |= kindPrompts
	}
	if res.Capabilities.Resources != nil {
		k |= kindResources
	}
	return k
}

// lists is what one sync listed: every kind in kinds, built for the sinks.
type lists struct {
	kinds     listKinds
	tools     []tools.Tool
	prompts   []tools.Prompt
	resources []tools.Resource
	templates []tools.Template
	// refused are the items left out because a host could not take them
	// (docs/design.md §19), or whose override's name was taken (§21), for
	// apply to log.
	refused []tools.Refusal
	// unmatched are the allow patterns of the policy that matched nothing
	// the server listed, for apply to log.
	unmatched []unmatched
	// raw is what the server listed, as it listed it: what the catalog
	// cache keeps (docs/design.md §20).
	raw rawLists
}

// unmatched is one kind's allow patterns that matched nothing.
type unmatched struct {
	kind     tools.ListKind
	patterns []string
}

// rawLists are a server's lists as it sent them.
type rawLists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// list fetches every page of each kind in kinds and builds the server's
// registrations. A prompts, resources or templates list the server does
// not implement (method not found) is empty rather than an error: many
// servers advertise resources without templates. Every kind is bounded
// (see pages).
func (s *Supervisor) list(ctx context.Context, cs *mcp.ClientSession, kinds listKinds, concurrent bool) (*lists, error) {
	l := &lists{kinds: kinds}
	name, lim := s.opts.Name, s.opts.limits
	// concurrent (a connect's listing): the kinds are listed at once,
	// each its pages in order, so a connect waits for the slowest list,
	// not for the sum of four round trips (docs/design.md §6). A re-sync
	// lists its kinds one after the other: syncs never overlap (R21, R31).
	// The first failure cancels the rest and is the one returned.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	run := func(fn func() error) {
		fail := func(err error) {
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		}
		if !concurrent {
			if ctx.Err() == nil {
				fail(fn())
			}
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail(fn())
		}()
	}
	if kinds&kindTools != 0 {
		run(func() (err error) {
			l.raw.tools, err = pages(ctx, name, "tools/list", lim.MaxTools, tools.LimitMaxTools, false,
				func(ctx context.Context, c string) ([]*mcp.Tool, string, error) {
					r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: c})
					if err != nil {
						return nil, "", err
					}
					return r.Tools, r.NextCursor, nil
				})
			return err
		})
	}
	if kinds&kindPrompts != 0 {
		run(func() (err error) {
			l.raw.prompts, err = pages(ctx, name, "prompts/list", lim.MaxPrompts, tools.LimitMaxPrompts, true,
				func(ctx context.Context, c string) ([]*mcp.Prompt, string, error) {
					r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: c})
					if err != nil {
						return nil, "", err
					}
					return r.Prompts, r.NextCursor, nil
				})
			return err
		})
	}
	if kinds&kindResources != 0 {
		run(func() (err error) {
			l.raw.resources, err = pages(ctx, name, "resources/list", lim.MaxResources, tools.LimitMaxResources, true,
				func(ctx context.Context, c string) ([]*mcp.Resource, string, error) {
					r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: c})
					if err != nil {
						return nil, "", err
					}
					return r.Resources, r.NextCursor, nil
				})
			return err
		})
		run(func() (err error) {
			l.raw.templates, err = pages(ctx, name, "resources/templates/list", lim.MaxTemplates, tools.LimitMaxTemplates, true,
				func(ctx context.Context, c string) ([]*mcp.ResourceTemplate, string, error) {
					r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: c})
					if err != nil {
						return nil, "", err
					}
					return r.ResourceTemplates, r.NextCursor, nil
				})
			return err
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return l, s.build(l)
}

// build makes the registrations of l's raw lists, kind by kind: from a
// live listing or from the catalog cache, through the same policy, which
// applies before names are made public (docs/design.md §21).
func (s *Supervisor) build(l *lists) error {
	name := s.opts.Name
	var err error
	if l.kinds&kindTools != 0 {
		sel := s.opts.Expose.SelectTools(l.raw.tools, s.opts.Namer)
		if l.tools, l.refused, err = tools.BuildTools(name, sel.Tools, sel.Namer, s.opts.Limits); err != nil {
			return err
		}
		l.refused = append(l.refused, sel.Refused...)
		l.unmatched = append(l.unmatched, unmatched{tools.KindTools, sel.Unmatched})
	}
	if l.kinds&kindPrompts != 0 {
		ps, um := s.opts.Expose.SelectPrompts(l.raw.prompts)
		if l.prompts, err = tools.BuildPrompts(name, ps, s.opts.Namer, s.opts.Limits); err != nil {
			return err
		}
		l.unmatched = append(l.unmatched, unmatched{tools.KindPrompts, um})
	}
	if l.kinds&kindResources != 0 {
		var refused []tools.Refusal
		if l.resources, refused, err = tools.BuildResources(name, l.raw.resources, s.opts.Limits); err != nil {
			return err
		}
		l.refused = append(l.refused, refused...)
		if l.templates, refused, err = tools.BuildTemplates(name, l.raw.templates, s.opts.Limits); err != nil {
			return err
		}
		l.refused = append(l.refused, refused...)
	}
	return nil
}

// pages fetches every page of one list, bounded whatever the server
// sends (docs/design.md §19): it stops at max+1 items (a *tools.LimitError:
// the list is over its limit, and nothing more of it is kept), at a cursor
// the server already sent, and after max+1 pages (a list of at most max
// items needs no more). optional: method not found is an empty list.
func pages[T any](ctx context.Context, server, method string, max int, limit string, optional bool,
	fetch func(context.Context, string) ([]T, string, error)) ([]T, error) {
	var out []T
	seed := maphash.MakeSeed()
	seen := map[uint64]bool{} // hashes of the cursors sent: a server's cursor may be large
	cursor := ""
	for page := 1; ; page++ {
		items, next, err := fetch(ctx, cursor)
		if err != nil {
			var je *jsonrpc.Error
			if optional && page == 1 && errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		out = append(out, items[:min(len(items), max+1-len(out))]...)
		if len(out) > max {
			return nil, fmt.Errorf("%s: page %d: %w", method, page,
				&tools.LimitError{Server: server, Limit: limit, Max: max, Got: len(out)})
		}
		if next == "" {
			return out, nil
		}
		h := maphash.String(seed, next)
		switch {
		case seen[h]:
			return nil, fmt.Errorf("mcpkeep: server %q: %s: page %d repeats an earlier cursor: %w", server, method, page, ErrPagination)
		case page > max:
			return nil, fmt.Errorf("mcpkeep: server %q: %s: still paginating after %d pages: %w", server, method, page, ErrPagination)
		}
		seen[h] = true
		cursor = next
	}
}

// apply swaps each listed kind into its sink for generation g, kind by
// kind (each swap atomic), and publishes g's catalog view. It returns the
// first sink error; the other kinds are applied regardless, and a kind
// whose swap failed keeps its previous registrations (R20).
func (lc *lifecycle) apply(g *generation, l *lists) error {
	name, cat := lc.opts.Name, lc.opts.Catalog
	lc.logRefused(g, l.refused)
	lc.logUnmatched(g, l.unmatched)
	var errs []error
	if l.kinds&kindTools != 0 {
		if err := lc.opts.Sink.Replace(name, g.n, l.tools); err != nil {
			errs = append(errs, err)
		} else {
			lc.tools = len(l.tools)
			lc.listed.safe, lc.listed.safeGen = replaySafe(l.tools), g.n
			lc.raw.tools = l.raw.tools
		}
	}
	if l.kinds&kindPrompts != 0 {
		if err := cat.ReplacePrompts(name, g.n, l.prompts); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.prompts = l.prompts
			lc.raw.prompts = l.raw.prompts
		}
	}
	if l.kinds&kindResources != 0 {
		if err := cat.ReplaceResources(name, g.n, l.resources); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.resources = l.resources
			lc.raw.resources = l.raw.resources
		}
		if err := cat.ReplaceTemplates(name, g.n, l.templates); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.templates = l.templates
			lc.raw.templates = l.raw.templates
		}
	}
	g.view.Store(newCatalogView(&lc.listed, g.n))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	lc.hinted = false // what is listed now is the live server's
	lc.saveCatalog(g)
	return nil
}

// logRefused logs each item a sync left out (docs/design.md §19), once per
// generation: a re-sync that lists the same bad item again stays quiet.
func (lc *lifecycle) logRefused(g *generation, refused []tools.Refusal) {
	for _, r := range refused {
		k := refusedKey{r.Kind, r.Key}
		if g.refused[k] {
			continue
		}
		if g.refused == nil {
			g.refused = make(map[refusedKey]bool)
		}
		g.refused[k] = true
		lc.refusedItems.Add(1)
		lc.log(slog.LevelWarn, "item refused", g, slog.String("kind", r.Kind.String()),
			slog.String("key", r.Key), slog.String("err", r.Reason))
	}
}

// logUnmatched warns, once per generation, of each allow pattern that
// matches nothing the server lists: likely a typo that hides everything.
func (lc *lifecycle) logUnmatched(g *generation, um []unmatched) {
	for _, u := range um {
		for _, p := range u.patterns {
			k := refusedKey{u.kind, "\x00allow " + p}
			if g.refused[k] {
				continue
			}
			if g.refused == nil {
				g.refused = make(map[refusedKey]bool)
			}
			g.refused[k] = true
			lc.log(slog.LevelWarn, "filter matches nothing", g, slog.String("kind", u.kind.String()),
				slog.String("allow", p))
		}
	}
}

// replaySafe returns the original names of the tools whose annotations
// say a repeated call is harmless (readOnlyHint or idempotentHint).
func replaySafe(ts []tools.Tool) map[string]bool {
	var out map[string]bool
	for _, t := range ts {
		if a := t.Annotations; a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
			if out == nil {
				out = make(map[string]bool)
			}
			out[t.Name] = true
		}
	}
	return out
}

// refusedKey identifies a refused item within its server's lists.
type refusedKey struct {
	kind tools.ListKind
	key  string
}

// syncFailed logs a failed re-sync: the previous registrations stay.
func (lc *lifecycle) syncFailed(g *generation, kinds listKinds, err error) {
	msg := "tools sync failed"
	if kinds&kindTools == 0 {
		msg = "catalog sync failed"
	}
	lc.log(slog.LevelWarn, msg, g, slog.Any("err", err))
}

// listedCatalog is the last registered prompts, resources and templates.
type listedCatalog struct {
	safe map[string]bool // tools whose lost calls may be replayed
	// safeGen is the generation whose own tools/list gave safe (0: the
	// cache's hint). Replay trusts only the hints of the generation that
	// lost the call (docs/design.md §21).
	safeGen   uint64
	prompts   []tools.Prompt
	resources []tools.Resource
	templates []tools.Template
}

// catalogView is a generation's catalog as GetPrompt and ReadResource
// check it: original prompt names, listed URIs and compiled templates;
// and the tools whose lost calls may be replayed, as that generation
// listed them.
type catalogView struct {
	safe      map[string]bool // shared with listedCatalog: replaced, never written; nil until gen listed its tools
	prompts   map[string]bool
	resources map[string]bool
	templates []*uritemplate.Template
}

// newCatalogView is generation n's view of l: the replay hints only when
// n listed them itself (a demand start serves from the registered catalog
// before its own lists came, and a cached or older hint may be stale).
func newCatalogView(l *listedCatalog, n uint64) *catalogView {
	v := &catalogView{prompts: map[string]bool{}, resources: map[string]bool{}}
	if l.safeGen == n {
		v.safe = l.safe
	}
	for _, p := range l.prompts {
		v.prompts[p.Name] = true
	}
	for _, r := range l.resources {
		v.resources[r.URI] = true
	}
	for _, t := range l.templates {
		if ut, err := uritemplate.New(t.URITemplate); err == nil {
			v.templates = append(v.templates, ut)
		}
	}
	return v
}

// hasResource: uri is listed, or some template matches it.
func (v *catalogView) hasResource(uri string) bool {
	if v == nil {
		return false
	}
	if v.resources[uri] {
		return true
	}
	for _, t := range v.templates {
		if t.Match(uri) != nil {
			return true
		}
	}
	return false
}

// listLater serves a demand-started generation from what is registered
// until its own lists arrive: its view is the registered catalog (with no
// replay hints: they are not this server's yet), and a
// kind the server no longer offers is emptied at once (the sync that
// follows, requested once it is established, lists the kinds it offers).
func (lc *lifecycle) listLater(g *generation, offered listKinds) {
	g.view.Store(newCatalogView(&lc.listed, g.n))
	if gone := (kindTools | kindPrompts | kindResources) &^ offered; gone != 0 {
		hinted := lc.hinted // the tools may still be the cache's
		if err := lc.apply(g, &lists{kinds: gone}); err != nil {
			lc.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
		}
		lc.hinted = hinted
	}
}
