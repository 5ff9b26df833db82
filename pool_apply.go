package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Apply makes the pool run cfg's servers. A server whose effective
// configuration (config.Server.Equal) is unchanged keeps running untouched:
// same process, same generation, same registrations. A changed server is
// disposed and started anew, never overlapping its old process; a removed
// one is disposed; an added one started. Servers are disposed, then
// started, in parallel; Start waits for each one's first attempt (see
// Supervisor.Start), so Apply returns once every new server is established
// or retrying in the background.
//
// A server whose predecessor (the changed, or removed and re-added, server
// of the same name) did not prove its process gone is started only once
// that predecessor released the name: Apply waits for it up to the
// server's connect timeout, and otherwise reports the server with
// ErrWaiting and starts it by itself when the late close signal arrives.
// From the moment Apply decides on a server, Pool.Call routes to it (see
// Call).
//
// The error joins every server that could not be started (a transport
// that cannot be built, a strict startup that failed), every server left
// waiting, and every dispose that did not complete; the other servers are
// applied regardless, and a server that failed to start is not kept, so
// the next Apply tries it again.
func (p *Pool) Apply(ctx context.Context, cfg *config.Config) error {
	select {
	case p.applying <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.base.Done():
		return fmt.Errorf("mcpkeep: pool: apply: %w", ErrDisposed)
	}
	defer func() { <-p.applying }()
	// The starts end with the caller's ctx or with the pool (Dispose).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(p.base, stop)()

	p.mu.Lock()
	if p.mu.disposed {
		p.mu.Unlock()
		return fmt.Errorf("mcpkeep: pool: apply: %w", ErrDisposed)
	}
	want := map[string]config.Server{}
	p.mu.order = p.mu.order[:0]
	for _, sc := range cfg.Servers {
		want[sc.Name] = sc
		p.mu.order = append(p.mu.order, sc.Name)
	}
	var old []*poolServer
	var kept, removed, changed []string
	for name, cur := range p.mu.servers {
		switch sc, ok := want[name]; {
		case !ok:
			old = append(old, cur)
			removed = append(removed, name)
		case !sc.Equal(cur.cfg):
			old = append(old, cur)
			changed = append(changed, name)
		default:
			kept = append(kept, name)
		}
	}
	var start []config.Server
	var added []string
	for _, sc := range cfg.Servers {
		if cur, ok := p.mu.servers[sc.Name]; !ok || !sc.Equal(cur.cfg) {
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
		fresh = append(fresh, &poolServer{cfg: sc, sup: sup, ready: make(chan struct{})})
	}

	// Swap the entries at once: the old ones retire (their names stay
	// taken until released), the new ones are routable from now on.
	p.mu.Lock()
	if p.mu.disposed {
		p.mu.Unlock()
		return fmt.Errorf("mcpkeep: pool: apply: %w", ErrDisposed)
	}
	for _, ps := range old {
		delete(p.mu.servers, ps.cfg.Name)
		p.mu.retired[ps.cfg.Name] = append(p.mu.retired[ps.cfg.Name], ps.sup)
	}
	for _, ps := range fresh {
		p.mu.servers[ps.cfg.Name] = ps
	}
	p.mu.Unlock()

	errs = append(errs, parallel(old, func(ps *poolServer) error {
		err := ps.sup.Dispose(context.WithoutCancel(ctx))
		p.watchRelease(ps.cfg.Name, ps.sup)
		return err
	}))
	// Every cached catalog is registered before any server spawns: the
	// host's first answers must not wait behind their start-up. A server
	// whose catalog is listed from the cache starts later, a few at a
	// time (stagger), so its start-up does not compete with them either.
	var now, later, free []*poolServer
	mayHold := make(map[*poolServer]bool, len(fresh))
	for _, ps := range fresh {
		p.mu.Lock()
		isFree := len(p.mu.retired[ps.cfg.Name]) == 0
		p.mu.Unlock()
		mayHold[ps] = isFree && p.opts.Cache != nil && !ps.cfg.FailOnStartupError && !ps.cfg.Lazy
		ps.held.Store(mayHold[ps])
		if isFree {
			free = append(free, ps)
		}
	}
	// The cache entries are read and registered a few at a time: a warm
	// start of many servers waits for the slowest, not for their sum
	// (docs/design.md §20). A failure is Start's to report.
	_ = parallelN(free, prepareWorkers(), func(ps *poolServer) error { return ps.sup.prepare() })
	for _, ps := range fresh {
		if mayHold[ps] && ps.sup.settledByCache() {
			later = append(later, ps)
		} else {
			ps.held.Store(false)
			now = append(now, ps)
		}
	}
	errs = append(errs, parallel(now, func(ps *poolServer) error { return p.startOnce(ctx, ps) }))
	if len(later) > 0 {
		p.bg.Add(1)
		go p.stagger(later)
	}
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
	p.mu.Lock()
	level, roots, haveRoots := p.mu.level, slices.Clone(p.mu.roots), p.mu.haveRoots
	p.mu.Unlock()
	o := Options{
		Name: sc.Name, Opener: op, Policy: sc.Reconnect,
		ConnectTimeout: sc.ConnectTimeout, FailOnStartupError: sc.FailOnStartupError,
		Logger: p.opts.Logger, Clock: p.opts.Clock, Rand: p.opts.Rand, Sink: p.sink,
		Catalog: p.catalog, Host: p.opts.Host, Namer: p.opts.Namer,
		Expose: sc.Policy(), NoReplay: !sc.ReplaySafeCalls, ReplayWait: sc.WaitForReady,
		Lazy: sc.Lazy, IdleStop: sc.IdleStop,
	}
	if p.opts.Cache != nil {
		// Keyed by what the servers are told of the host, too: a server
		// may list other tools to another host (docs/design.md §20).
		o.Cache = p.opts.Cache.For(sc, declaredBy(&p.opts.Host, haveRoots, op))
	}
	if haveRoots {
		o.Roots = roots
		if o.Roots == nil {
			o.Roots = []*mcp.Root{}
		}
	}
	sup, err := New(o)
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: server %q: %w", sc.Name, err)
	}
	if level != "" {
		_ = sup.SetLoggingLevel(context.Background(), level) // recorded: applied at connect
	}
	if p.opts.Observer != nil {
		sup.Subscribe(p.opts.Observer)
	}
	return sup, nil
}

// start starts ps once every predecessor of its name released the name,
// waiting up to the server's connect timeout; past that it reports
// ErrWaiting and leaves the start to a goroutine of the pool.
func (p *Pool) start(ctx context.Context, ps *poolServer) error {
	p.mu.Lock()
	preds := slices.Clone(p.mu.retired[ps.cfg.Name])
	p.mu.Unlock()
	if len(preds) > 0 {
		wait := ps.cfg.ConnectTimeout
		if wait <= 0 {
			wait = config.DefaultConnectTimeout
		}
		t := p.clock.Timer(wait)
		defer t.Stop()
		for _, pred := range preds {
			select {
			case <-pred.Released():
				continue
			case <-t.C:
			case <-ctx.Done():
			}
			p.mu.Lock()
			ps.waiting = pred
			p.mu.Unlock()
			p.bg.Add(1)
			go p.startLater(ps, preds)
			p.log.Warn("server waiting", slog.String("server", ps.cfg.Name),
				slog.String("reason", "its previous process has not been proven gone"))
			return fmt.Errorf("mcpkeep: server %q: %w", ps.cfg.Name, ErrWaiting)
		}
	}
	return p.startNow(ctx, ps)
}

// startLater is the deferred start of a server whose predecessors had not
// released its name when Apply gave up waiting.
func (p *Pool) startLater(ps *poolServer, preds []*Supervisor) {
	defer p.bg.Done()
	for _, pred := range preds {
		select {
		case <-pred.Released():
		case <-p.base.Done():
			p.abandon(ps, ErrDisposed)
			return
		}
	}
	p.mu.Lock()
	ps.waiting = nil
	p.mu.Unlock()
	if err := p.startNow(p.base, ps); err != nil {
		p.log.Warn("server start failed", slog.String("server", ps.cfg.Name), slog.Any("err", err))
		return
	}
	p.log.Info("server started", slog.String("server", ps.cfg.Name),
		slog.String("after", "its previous process was proven gone"))
}

// startNow runs Start. A server that did not start is not kept: Start left
// it disposed (strict startup), or ctx ended while it connects; Dispose is
// bounded by the termination window.
func (p *Pool) startNow(ctx context.Context, ps *poolServer) error {
	if err := ps.sup.Start(ctx); err != nil {
		_ = ps.sup.Dispose(context.WithoutCancel(ctx))
		p.abandon(ps, err)
		return err
	}
	close(ps.ready)
	return nil
}

// abandon removes a server that will not run and wakes its waiters. Its
// supervisor retires like a disposed one.
func (p *Pool) abandon(ps *poolServer, err error) {
	p.mu.Lock()
	if p.mu.servers[ps.cfg.Name] == ps {
		delete(p.mu.servers, ps.cfg.Name)
	}
	p.mu.retired[ps.cfg.Name] = append(p.mu.retired[ps.cfg.Name], ps.sup)
	ps.err = err
	p.mu.Unlock()
	close(ps.ready)
	p.watchRelease(ps.cfg.Name, ps.sup)
}

// watchRelease forgets a retired supervisor once its name is released,
// at once or, after an incomplete shutdown, when the late signal comes.
func (p *Pool) watchRelease(name string, sup *Supervisor) {
	select {
	case <-sup.Released():
		p.unretire(name, sup)
		return
	default:
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		select {
		case <-sup.Released():
			p.unretire(name, sup)
		case <-p.base.Done():
		}
	}()
}

func (p *Pool) unretire(name string, sup *Supervisor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := slices.DeleteFunc(p.mu.retired[name], func(s *Supervisor) bool { return s == sup })
	if len(list) == 0 {
		delete(p.mu.retired, name)
	} else {
		p.mu.retired[name] = list
	}
}
