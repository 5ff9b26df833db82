package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownTool: Pool.Call of a public name no server has registered.
var ErrUnknownTool = errors.New("unknown tool")

// PoolOptions configure a Pool. Every field is optional.
type PoolOptions struct {
	// Sink receives every server's tools: one registry shared by all
	// supervisors, where each reserves its server's name. nil is a fresh
	// tools.Set. Pool.Call needs a Sink that is a tools.Lookuper (as Set is).
	Sink tools.Sink
	// Logger receives the supervisors' lifecycle logs, the transports'
	// debug output and the pool's own; nil discards.
	Logger *slog.Logger
	// Clock drives the supervisors' timers; nil is the real clock.
	Clock clock.Clock
	// Rand is the jitter source; nil is math/rand/v2's.
	Rand backoff.Rand
	// Observer, when set, is subscribed to every supervisor before it
	// starts; it runs on the supervisors' goroutines (see Observer).
	Observer Observer
	// Opener, when set, makes the transport of a server instead of
	// config.Server.Opener: tests and embedders script servers with it.
	Opener func(config.Server) (transport.Opener, error)
}

// Pool supervises the servers of a config.Config: one Supervisor per
// server, all registering into one tools Sink. Apply reloads by
// difference, so a config change restarts only the servers it touches.
type Pool struct {
	opts PoolOptions
	sink tools.Sink
	log  *slog.Logger

	apply sync.Mutex // serializes Apply and Dispose

	mu       sync.Mutex // guards the fields below
	servers  map[string]*poolServer
	disposed bool
}

type poolServer struct {
	cfg config.Server
	sup *Supervisor
}

// NewPool returns an empty pool; Apply starts its servers.
func NewPool(opts PoolOptions) *Pool {
	p := &Pool{opts: opts, sink: opts.Sink, log: opts.Logger, servers: map[string]*poolServer{}}
	if p.sink == nil {
		p.sink = tools.NewSet(tools.Limits{})
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return p
}

// Sink returns the registry the pool's supervisors register into.
func (p *Pool) Sink() tools.Sink { return p.sink }

// Apply makes the pool run cfg's servers. A server whose effective
// configuration (config.Server.Equal) is unchanged keeps running untouched:
// same process, same generation, same registrations. A changed server is
// disposed and started anew, never overlapping its old process; a removed
// one is disposed; an added one started. Servers are disposed, then
// started, in parallel; Start waits for each one's first attempt (see
// Supervisor.Start), so Apply returns once every new server is established
// or retrying in the background.
//
// The error joins every server that could not be started (a transport
// that cannot be built, a strict startup that failed) and every dispose
// that did not complete; the other servers are applied regardless, and a
// server that failed to start is not kept, so the next Apply tries it
// again.
func (p *Pool) Apply(ctx context.Context, cfg *config.Config) error {
	p.apply.Lock()
	defer p.apply.Unlock()
	p.mu.Lock()
	if p.disposed {
		p.mu.Unlock()
		return fmt.Errorf("mcpkeep: pool: apply: %w", ErrDisposed)
	}
	want := map[string]config.Server{}
	for _, sc := range cfg.Servers {
		want[sc.Name] = sc
	}
	var stop []*poolServer
	var kept, removed, changed []string
	for name, cur := range p.servers {
		switch sc, ok := want[name]; {
		case !ok:
			stop = append(stop, cur)
			removed = append(removed, name)
		case !sc.Equal(cur.cfg):
			stop = append(stop, cur)
			changed = append(changed, name)
		default:
			kept = append(kept, name)
		}
	}
	var start []config.Server
	var added []string
	for _, sc := range cfg.Servers {
		if cur, ok := p.servers[sc.Name]; !ok || !sc.Equal(cur.cfg) {
			start = append(start, sc)
			if !ok {
				added = append(added, sc.Name)
			}
		}
	}
	p.mu.Unlock()

	var errs []error
	// Build before touching anything running: a server whose transport
	// cannot be built is reported, and its old version stopped like any
	// changed server (the pool runs what cfg says, or nothing).
	var fresh []*poolServer
	for _, sc := range start {
		sup, err := p.newSupervisor(sc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fresh = append(fresh, &poolServer{cfg: sc, sup: sup})
	}

	errs = append(errs, parallel(stop, func(ps *poolServer) error {
		err := ps.sup.Dispose(context.WithoutCancel(ctx))
		p.mu.Lock()
		delete(p.servers, ps.cfg.Name)
		p.mu.Unlock()
		return err
	}))
	errs = append(errs, parallel(fresh, func(ps *poolServer) error {
		if err := ps.sup.Start(ctx); err != nil {
			// Start left it disposed (strict startup) or ctx ended while
			// it connects: either way it is not kept, and Dispose is
			// bounded by the termination window.
			_ = ps.sup.Dispose(context.WithoutCancel(ctx))
			return err
		}
		p.mu.Lock()
		p.servers[ps.cfg.Name] = ps
		p.mu.Unlock()
		return nil
	}))
	sortAll(kept, removed, changed, added)
	p.log.Info("config applied", slog.Any("added", added), slog.Any("changed", changed),
		slog.Any("removed", removed), slog.Any("unchanged", kept))
	return errors.Join(errs...)
}

func sortAll(lists ...[]string) {
	for _, l := range lists {
		slices.Sort(l)
	}
}

func (p *Pool) newSupervisor(sc config.Server) (*Supervisor, error) {
	var op transport.Opener
	var err error
	if p.opts.Opener != nil {
		op, err = p.opts.Opener(sc)
	} else {
		op, err = sc.Opener(p.opts.Logger)
	}
	if err != nil {
		return nil, err
	}
	sup, err := New(Options{
		Name: sc.Name, Opener: op, Policy: sc.Reconnect,
		ConnectTimeout: sc.ConnectTimeout, FailOnStartupError: sc.FailOnStartupError,
		Logger: p.opts.Logger, Clock: p.opts.Clock, Rand: p.opts.Rand, Sink: p.sink,
	})
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: server %q: %w", sc.Name, err)
	}
	if p.opts.Observer != nil {
		sup.Subscribe(p.opts.Observer)
	}
	return sup, nil
}

// Dispose disposes every server in parallel (each through its close
// barrier: no child process is left) and joins their errors. The pool
// cannot be used afterwards.
func (p *Pool) Dispose(ctx context.Context) error {
	p.apply.Lock()
	defer p.apply.Unlock()
	p.mu.Lock()
	p.disposed = true
	all := make([]*poolServer, 0, len(p.servers))
	for _, ps := range p.servers {
		all = append(all, ps)
	}
	p.servers = map[string]*poolServer{}
	p.mu.Unlock()
	return parallel(all, func(ps *poolServer) error { return ps.sup.Dispose(ctx) })
}

// Supervisor returns the running supervisor of server name.
func (p *Pool) Supervisor(name string) (*Supervisor, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.servers[name]
	if !ok {
		return nil, false
	}
	return ps.sup, true
}

// Server returns the effective configuration of running server name.
func (p *Pool) Server(name string) (config.Server, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.servers[name]
	if !ok {
		return config.Server{}, false
	}
	return ps.cfg, true
}

// States returns a snapshot of every running server, sorted by name.
func (p *Pool) States() []Snapshot {
	p.mu.Lock()
	sups := make([]*Supervisor, 0, len(p.servers))
	for _, ps := range p.servers {
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

// Call calls a tool by its public name ("<server>__<tool>"), routed
// through the Sink's Lookup to the server's supervisor under the tool's
// original name.
//
// With opts nil the server's configuration decides what happens during an
// outage: with waitForReadyMs 0 the call fails fast with a
// *NotConnectedError naming the server, its state and the next retry;
// otherwise it waits up to that long for the server to be established (the
// wait alone is bounded, not the call that follows). Non-nil opts are
// passed to Supervisor.Call as they are. A call in flight when its server
// dies fails with ErrConnectionLost and is never replayed.
func (p *Pool) Call(ctx context.Context, public string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	lk, ok := p.sink.(tools.Lookuper)
	if !ok {
		return nil, fmt.Errorf("mcpkeep: pool: call %q: sink %T cannot look tools up", public, p.sink)
	}
	server, t, ok := lk.Lookup(public)
	if !ok {
		return nil, fmt.Errorf("mcpkeep: tool %q: %w", public, ErrUnknownTool)
	}
	p.mu.Lock()
	ps := p.servers[server]
	p.mu.Unlock()
	if ps == nil {
		return nil, fmt.Errorf("mcpkeep: tool %q: %w (server %q is not running)", public, ErrUnknownTool, server)
	}
	if opts == nil && ps.cfg.WaitForReady > 0 {
		opts = &CallOptions{WaitForReady: true, ReadyTimeout: ps.cfg.WaitForReady}
	}
	return ps.sup.Call(ctx, t.Name, args, opts)
}

// parallel runs fn on every item at once and joins the errors.
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
