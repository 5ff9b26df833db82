package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
	// (docs/design.md §19), for apply to log.
	refused []tools.Refusal
}

// list fetches every page of each kind in kinds and builds the server's
// registrations. A prompts, resources or templates list the server does
// not implement (method not found) is empty rather than an error: many
// servers advertise resources without templates.
func (s *Supervisor) list(ctx context.Context, cs *mcp.ClientSession, kinds listKinds) (*lists, error) {
	l := &lists{kinds: kinds}
	var err error
	if kinds&kindTools != 0 {
		if l.tools, l.refused, err = s.listTools(ctx, cs); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
	}
	if kinds&kindPrompts != 0 {
		ps, err := collect(cs.Prompts(ctx, nil))
		if err != nil {
			return nil, fmt.Errorf("prompts/list: %w", err)
		}
		if l.prompts, err = tools.BuildPrompts(s.opts.Name, ps, s.opts.Namer, s.opts.Limits); err != nil {
			return nil, err
		}
	}
	if kinds&kindResources != 0 {
		rs, err := collect(cs.Resources(ctx, nil))
		if err != nil {
			return nil, fmt.Errorf("resources/list: %w", err)
		}
		var refused []tools.Refusal
		if l.resources, refused, err = tools.BuildResources(s.opts.Name, rs, s.opts.Limits); err != nil {
			return nil, err
		}
		l.refused = append(l.refused, refused...)
		ts, err := collect(cs.ResourceTemplates(ctx, nil))
		if err != nil {
			return nil, fmt.Errorf("resources/templates/list: %w", err)
		}
		if l.templates, refused, err = tools.BuildTemplates(s.opts.Name, ts, s.opts.Limits); err != nil {
			return nil, err
		}
		l.refused = append(l.refused, refused...)
	}
	return l, nil
}

// collect drains a paginating iterator; method not found is an empty list.
func collect[T any](seq func(func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
				return nil, nil
			}
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// listTools fetches every page and builds the server's definitions,
// leaving out (and returning) the tools a host could not take.
func (s *Supervisor) listTools(ctx context.Context, cs *mcp.ClientSession) ([]tools.Tool, []tools.Refusal, error) {
	var list []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		list = append(list, t)
	}
	return tools.BuildTools(s.opts.Name, list, s.opts.Namer, s.opts.Limits)
}

// apply swaps each listed kind into its sink for generation g, kind by
// kind (each swap atomic), and publishes g's catalog view. It returns the
// first sink error; the other kinds are applied regardless, and a kind
// whose swap failed keeps its previous registrations (R20).
func (lc *lifecycle) apply(g *generation, l *lists) error {
	name, cat := lc.opts.Name, lc.opts.Catalog
	lc.logRefused(g, l.refused)
	var errs []error
	if l.kinds&kindTools != 0 {
		if err := lc.opts.Sink.Replace(name, g.n, l.tools); err != nil {
			errs = append(errs, err)
		} else {
			lc.tools = len(l.tools)
		}
	}
	if l.kinds&kindPrompts != 0 {
		if err := cat.ReplacePrompts(name, g.n, l.prompts); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.prompts = l.prompts
		}
	}
	if l.kinds&kindResources != 0 {
		if err := cat.ReplaceResources(name, g.n, l.resources); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.resources = l.resources
		}
		if err := cat.ReplaceTemplates(name, g.n, l.templates); err != nil {
			errs = append(errs, err)
		} else {
			lc.listed.templates = l.templates
		}
	}
	g.view.Store(newCatalogView(&lc.listed))
	return errors.Join(errs...)
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
		lc.log(slog.LevelWarn, "item refused", g, slog.String("kind", r.Kind.String()),
			slog.String("key", r.Key), slog.String("err", r.Reason))
	}
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
	prompts   []tools.Prompt
	resources []tools.Resource
	templates []tools.Template
}

// catalogView is a generation's catalog as GetPrompt and ReadResource
// check it: original prompt names, listed URIs and compiled templates.
type catalogView struct {
	prompts   map[string]bool
	resources map[string]bool
	templates []*uritemplate.Template
}

func newCatalogView(l *listedCatalog) *catalogView {
	v := &catalogView{prompts: map[string]bool{}, resources: map[string]bool{}}
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
