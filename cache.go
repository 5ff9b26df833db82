package mcpkeep

import (
	"log/slog"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// CatalogStore keeps one server's catalog between runs (docs/design.md
// §20); catalogcache.Store is one. Load returns (nil, nil) when nothing is
// kept; an error is a warning (the supervisor goes on without a hint).
type CatalogStore interface {
	Load() (*catalogcache.Entry, error)
	Save(*catalogcache.Entry) error
}

// loadHint registers the cached catalog, if any, before the first connect:
// the host lists it while the server connects, and the first established
// generation replaces it (the sinks tell the host only of a difference).
// It reports whether the server need not hold the host: it has a cached
// catalog, or the last run never saw it established.
func (lc *lifecycle) loadHint() (settled bool) {
	if lc.opts.Cache == nil {
		return false
	}
	e, err := lc.opts.Cache.Load()
	if err != nil {
		lc.log(slog.LevelWarn, "catalog cache ignored", nil, slog.Any("err", err))
		return false
	}
	if e == nil {
		return false
	}
	if d := lc.s.declares(); e.Declared != nil && *e.Declared != d {
		// Listed for a host that declared otherwise: the server may list
		// other tools to this one (docs/design.md §20).
		lc.log(slog.LevelDebug, "catalog cache ignored", nil, slog.String("err", "listed for a client that declared other capabilities"))
		return false
	}
	lc.notComing = e.NotComing
	if !e.Listed {
		return e.NotComing
	}
	l := &lists{kinds: kindTools | kindPrompts | kindResources,
		raw: rawLists{tools: e.Tools, prompts: e.Prompts, resources: e.Resources, templates: e.Templates}}
	if err := lc.s.build(l); err != nil {
		lc.log(slog.LevelWarn, "catalog cache ignored", nil, slog.Any("err", err))
		return e.NotComing
	}
	// Generation 0 is the hint's: every live generation's swap replaces it.
	name, cat := lc.opts.Name, lc.opts.Catalog
	if err := lc.opts.Sink.Replace(name, 0, l.tools); err == nil {
		lc.tools = len(l.tools)
		lc.listed.safe = replaySafe(l.tools)
	}
	if err := cat.ReplacePrompts(name, 0, l.prompts); err == nil {
		lc.listed.prompts = l.prompts
	}
	if err := cat.ReplaceResources(name, 0, l.resources); err == nil {
		lc.listed.resources = l.resources
	}
	if err := cat.ReplaceTemplates(name, 0, l.templates); err == nil {
		lc.listed.templates = l.templates
	}
	lc.raw = l.raw
	lc.init = e.Init
	if e.Init != nil {
		lc.s.served.Store(e.Init)
	}
	lc.hinted = true
	return true
}

// saveCatalog writes what is listed now, after a successful listing of g.
func (lc *lifecycle) saveCatalog(g *generation) {
	if g != nil && g.cs != nil {
		if r := g.cs.InitializeResult(); r != nil {
			lc.init = r
		}
	}
	lc.notComing = false
	lc.store(&catalogcache.Entry{Listed: true, Init: lc.init, Tools: lc.raw.tools,
		Prompts: lc.raw.prompts, Resources: lc.raw.resources, Templates: lc.raw.templates})
}

// rememberNotComing records that this run never saw the server
// established, keeping the last catalog: the next start does not hold
// the host for it (docs/design.md §20).
func (lc *lifecycle) rememberNotComing() {
	if lc.opts.Cache == nil || lc.everEstablished || lc.notComing || lc.nextGen == 0 {
		return
	}
	lc.notComing = true
	listed := lc.init != nil || lc.raw.tools != nil || lc.raw.prompts != nil || lc.raw.resources != nil
	lc.store(&catalogcache.Entry{Listed: listed, NotComing: true, Init: lc.init, Tools: lc.raw.tools,
		Prompts: lc.raw.prompts, Resources: lc.raw.resources, Templates: lc.raw.templates})
}

func (lc *lifecycle) store(e *catalogcache.Entry) {
	if lc.opts.Cache == nil {
		return
	}
	e.Saved = lc.opts.Clock.Now()
	d := lc.s.declares()
	e.Declared = &d
	if err := lc.opts.Cache.Save(e); err != nil && !lc.saveWarned {
		lc.saveWarned = true // once: a read-only cache is not news at every sync
		lc.log(slog.LevelWarn, "catalog cache not written", lc.cur, slog.Any("err", err))
	}
}

// declares is what the supervisor's generations tell the server of the
// host: a server's lists may depend on it, so the cache keys a catalog by
// it (docs/design.md §20).
func (s *Supervisor) declares() catalogcache.Declared {
	_, haveRoots := s.stickyRoots()
	return declaredBy(&s.opts.Host, haveRoots, s.opts.Opener)
}

// declaredBy is what a client with the handlers h (and roots when
// haveRoots) declares through op: the capabilities newClient's client
// gets, and the protocol version op's sessions ask for.
func declaredBy(h *HostHandlers, haveRoots bool, op transport.Opener) catalogcache.Declared {
	d := catalogcache.Declared{
		Sampling:      h.CreateMessage != nil || h.CreateMessageWithTools != nil,
		SamplingTools: h.CreateMessageWithTools != nil,
		Elicitation:   h.Elicit != nil,
		Roots:         haveRoots || h.ListRoots != nil,
	}
	if so, ok := op.(transport.SessionOptioner); ok {
		if o := so.SessionOptions(); o != nil {
			d.Protocol = o.ProtocolVersion
		}
	}
	return d
}

// starting: the host was shown lists no live generation confirmed yet
// (the cache's, or an idle server's) and a generation is connecting to
// serve them, so a request waits for it instead of failing
// (docs/design.md §20). A server without a cache registers nothing before
// it is established and keeps the fail-fast outage semantics.
func (lc *lifecycle) starting() bool {
	return (lc.hinted || lc.demanded) && lc.m.State() == fsm.Connecting
}

// settledByCache: the cache listed the server (or remembered that it did
// not come), so a host need not wait for its start. Only before Start,
// from the goroutine that ran prepare.
func (s *Supervisor) settledByCache() bool { return s.lc.settled }
