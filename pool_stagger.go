package mcpkeep

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// The staggered start (docs/design.md §20). A server whose catalog the
// cache listed need not be up for the host's first answers, and fifty
// servers spawning at once leave a small machine no CPU for them: the
// proxy answered initialize in 243 ms and its first tools/list in 632 ms
// with every catalog cached, slower than the slowest cold connect. So the
// pool starts such servers after Apply returns, staggerSlots() at a time,
// each slot held until the server's first attempt settled. A request for a
// server still held starts it at once.

// staggerSlots is how many held servers connect at once: one per CPU.
var staggerSlots = func() int { return max(1, runtime.GOMAXPROCS(0)) }

// stagger starts the held servers of one Apply, in config order.
func (p *Pool) stagger(list []*poolServer) {
	defer p.bg.Done()
	if hold := p.opts.HoldStarts; hold != nil {
		t := p.clock.Timer(StartHoldMax)
		select {
		case <-hold:
		case <-t.C:
		case <-p.base.Done():
		}
		t.Stop()
	}
	slots := make(chan struct{}, staggerSlots())
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, ps := range list {
		slot := false
		select {
		case slots <- struct{}{}:
			slot = true
		case <-p.base.Done(): // the pool is disposed: each start is refused at once
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if slot {
				defer func() { <-slots }()
			}
			if err := p.startOnce(p.base, ps); err != nil {
				p.log.Warn("server start failed", slog.String("server", ps.cfg.Name), slog.Any("err", err))
				return
			}
			p.awaitFirstAttempt(ps)
		}()
	}
}

// startOnce starts ps unless someone did already (Apply, the stagger, a
// request), and returns that start's outcome.
func (p *Pool) startOnce(ctx context.Context, ps *poolServer) error {
	ran := false
	var err error
	ps.once.Do(func() {
		ran = true
		defer ps.held.Store(false)
		p.mu.Lock()
		current := !p.mu.disposed && p.mu.servers[ps.cfg.Name] == ps
		p.mu.Unlock()
		if !current {
			// Replaced or removed (and disposed) before its turn.
			ps.err = fmt.Errorf("mcpkeep: server %q: %w", ps.cfg.Name, ErrDisposed)
			close(ps.ready)
			err = ps.err
			return
		}
		err = p.start(ctx, ps)
	})
	if ran {
		return err
	}
	select {
	case <-ps.ready:
		return ps.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitFirstAttempt holds a stagger slot until ps's first attempt settled
// (established, failed or given up), bounded by its connect timeout.
func (p *Pool) awaitFirstAttempt(ps *poolServer) {
	wait := ps.cfg.ConnectTimeout
	if wait <= 0 {
		wait = config.DefaultConnectTimeout
	}
	t := p.clock.Timer(wait)
	defer t.Stop()
	for {
		changed := ps.sup.Changed()
		if st := ps.sup.State(); !st.Started || st.State != fsm.Connecting {
			return
		}
		select {
		case <-changed:
		case <-t.C:
			return
		case <-p.base.Done():
			return
		}
	}
}
