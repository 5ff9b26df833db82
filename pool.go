package mcpkeep

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownTool: Pool.Call of a public name no server has registered.
var ErrUnknownTool = errors.New("unknown tool")

// ErrWaiting: Pool.Apply did not start a server because the previous
// supervisor of its name has not proven its process gone (its name is
// quarantined, tools.ErrQuarantined). The pool starts it by itself once
// the late close signal arrives.
var ErrWaiting = errors.New("waiting for the previous process of the server to end")

// PoolOptions configure a Pool. Every field is optional.
type PoolOptions struct {
	// Sink receives every server's tools: one registry shared by all
	// supervisors, where each reserves its server's name. nil is a fresh
	// tools.Set. Pool.Call needs a Sink that is a tools.Lookuper (as Set is).
	Sink tools.Sink
	// Logger receives the supervisors' lifecycle logs, the transports'
	// debug output and the pool's own; nil discards.
	Logger *slog.Logger
	// Clock drives the supervisors' timers and the pool's bounded waits;
	// nil is the real clock.
	Clock clock.Clock
	// Rand is the jitter source; nil is math/rand/v2's.
	Rand backoff.Rand
	// Observer, when set, is subscribed to every supervisor before it
	// starts; it runs on the supervisors' goroutines (see Observer).
	Observer Observer
	// Catalog receives every server's prompts, resources and templates;
	// nil is a fresh tools.Catalog. The pool's routing of prompts and
	// resources needs one that is a tools.CatalogLookuper.
	Catalog tools.CatalogSink
	// Host holds the host's handlers, given to every supervisor (see
	// HostHandlers; each call names its server).
	Host HostHandlers
	// Namer maps every server's tool and prompt names to public ones; nil
	// is tools.PublicNames ("<server>__<name>").
	Namer tools.Namer
	// Roots, when non-nil, are the roots every server is offered from its
	// first connection (see Options.Roots and Pool.SetRoots).
	Roots []*mcp.Root
	// Opener, when set, makes the transport of a server instead of
	// config.Server.Opener: tests and embedders script servers with it.
	Opener func(config.Server) (transport.Opener, error)
	// Cache, when set, keeps every server's catalog between runs, each
	// under its name and identity (docs/design.md §20; Options.Cache).
	Cache *catalogcache.Cache
	// HoldStarts, when set, holds the staggered start of the servers the
	// cache listed until it is closed, at most StartHoldMax: a proxy
	// closes it once its host has its first lists, which the spawns would
	// otherwise slow down (docs/design.md §20). A request for a held
	// server starts it at once, as ever.
	HoldStarts <-chan struct{}
}

// StartHoldMax bounds PoolOptions.HoldStarts.
const StartHoldMax = time.Second

// Pool supervises the servers of a config.Config: one Supervisor per
// server, all registering into one tools Sink. Apply reloads by
// difference, so a config change restarts only the servers it touches.
//
// A server name is never served by two supervisors whose processes could
// overlap: a replacement starts only after its predecessor released the
// name (Supervisor.Released), which after an incomplete shutdown waits for
// the late close signal (docs/design.md §6).
type Pool struct {
	opts    PoolOptions
	sink    tools.Sink
	catalog tools.CatalogSink
	poolCatalogState
	log   *slog.Logger
	clock clock.Clock

	// base is cancelled by Dispose: it ends the starts of an Apply in
	// flight and every wait for a quarantined predecessor.
	base   context.Context
	cancel context.CancelFunc
	// applying is a one-slot lock held by Apply; Dispose waits for it
	// with its own context.
	applying chan struct{}
	// bg counts the pool's own goroutines: deferred starts and the
	// watchers of quarantined predecessors.
	bg sync.WaitGroup

	mu struct {
		sync.Mutex
		// servers holds every server the pool runs or is about to run:
		// established, retrying, starting, or waiting for a predecessor.
		// A call is routed by this map from the moment Apply decides on
		// a server, so no tool the host hears of is ever unroutable.
		servers map[string]*poolServer
		// retired holds disposed supervisors whose names are not released.
		retired  map[string][]*Supervisor
		disposed bool
		// order is the servers' order in the last applied config.
		order []string
		// level and roots are what every new supervisor starts with.
		level     mcp.LoggingLevel
		roots     []*mcp.Root
		haveRoots bool
	}
}

// poolServer is one server of the pool. ready is closed once its Start
// returned (it then serves, or retries in the background) or was
// abandoned (err says why, and the entry is gone from servers).
type poolServer struct {
	cfg   config.Server
	sup   *Supervisor
	ready chan struct{}
	err   error // written before ready is closed
	// waiting is set while the start waits for a predecessor's release.
	waiting *Supervisor
	// held: the server's start is left to the staggered start (it can
	// wait: its catalog is listed from the cache); a request starts it
	// at once. once runs its start, whoever asks first.
	held atomic.Bool
	once sync.Once
}

// NewPool returns an empty pool; Apply starts its servers.
func NewPool(opts PoolOptions) *Pool {
	p := &Pool{opts: opts, sink: opts.Sink, log: opts.Logger, clock: opts.Clock, applying: make(chan struct{}, 1)}
	p.mu.servers = map[string]*poolServer{}
	p.mu.retired = map[string][]*Supervisor{}
	p.base, p.cancel = context.WithCancel(context.Background())
	if p.sink == nil {
		p.sink = tools.NewSet(tools.Limits{})
	}
	p.catalog = opts.Catalog
	if p.catalog == nil {
		p.catalog = tools.NewCatalog(tools.Limits{})
	}
	p.mu.roots, p.mu.haveRoots = slices.Clone(opts.Roots), opts.Roots != nil
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.clock == nil {
		p.clock = clock.New()
	}
	return p
}

// Sink returns the registry the pool's supervisors register into.
func (p *Pool) Sink() tools.Sink { return p.sink }

// Dispose disposes every server in parallel (each through its close
// barrier: no child process is left) and joins their errors. It cancels
// the starts of an Apply in flight and returns by ctx's deadline even
// while that Apply is still winding down (then with ctx's error). The pool
// cannot be used afterwards.
func (p *Pool) Dispose(ctx context.Context) error {
	p.mu.Lock()
	p.mu.disposed = true
	all := make([]*poolServer, 0, len(p.mu.servers))
	for _, ps := range p.mu.servers {
		all = append(all, ps)
	}
	p.mu.servers = map[string]*poolServer{}
	p.mu.Unlock()
	p.cancel()
	err := parallel(all, func(ps *poolServer) error { return ps.sup.Dispose(ctx) })
	// Wait for an Apply in flight (it disposes what it started) and for
	// the pool's own goroutines.
	select {
	case p.applying <- struct{}{}:
		<-p.applying
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	done := make(chan struct{})
	go func() { p.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	return err
}

// Supervisor returns the supervisor of server name (running, starting or
// waiting for its predecessor).
func (p *Pool) Supervisor(name string) (*Supervisor, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.mu.servers[name]
	if !ok {
		return nil, false
	}
	return ps.sup, true
}

// Server returns the effective configuration of server name.
func (p *Pool) Server(name string) (config.Server, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.mu.servers[name]
	if !ok {
		return config.Server{}, false
	}
	return ps.cfg, true
}

// States returns a snapshot of every server, sorted by name.
func (p *Pool) States() []Snapshot {
	p.mu.Lock()
	sups := make([]*Supervisor, 0, len(p.mu.servers))
	for _, ps := range p.mu.servers {
		sups = append(sups, ps.sup)
	}
	p.mu.Unlock()
	out := make([]Snapshot, len(sups))
	for i, s := range sups {
		out[i] = s.State()
	}
	slices.SortFunc(out, func(a, b Snapshot) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// parallel runs fn on every item at once and joins the errors.
// parallelN is parallel with at most n calls of fn at once.
func parallelN[T any](items []T, n int, fn func(T) error) error {
	errs := make([]error, len(items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, len(items)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = fn(items[i])
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// prepareWorkers is how many servers' cached catalogs Apply reads and
// registers at once: at least a few (they read files), else one per CPU.
var prepareWorkers = func() int { return max(4, runtime.GOMAXPROCS(0)) }

func parallel[T any](items []T, fn func(T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(it)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
