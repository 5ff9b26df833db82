package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scaleRun is one fleet of supervisors dropped at once.
type scaleRun struct {
	jitter      float64
	arrivals    []time.Time // retry_due → connecting: the redial reaches the server
	released    []time.Time // lost → backing-off: loss seen and barrier complete
	scheduled   []time.Time // the NextRetry of each backing-off: when the policy redials
	settled     time.Duration
	killSpan    time.Duration
	cpu         time.Duration // process CPU from the drop until all re-established
	heapPer     float64       // idle, after GC, per supervisor
	goroutinesP float64       // idle, per supervisor
}

type scaleResult struct {
	n           int
	delay       time.Duration
	runs        []scaleRun
	directHeap  float64 // per idle direct session
	directGor   float64
	directCPU   time.Duration // per direct reconnect
	directTotal time.Duration // wall time of the direct herd
}

// directConn is a host's own session over an in-memory server.
type directConn struct {
	mem *transport.Memory
	g   transport.Generation
	cs  *mcp.ClientSession
}

func (d *directConn) connect(ctx context.Context, gen uint64) error {
	g, err := d.mem.Open(ctx, gen)
	if err != nil {
		return err
	}
	cs, err := newClient().Connect(ctx, g.Transport(), nil)
	if err != nil {
		g.Terminate()
		return err
	}
	d.g, d.cs = g, cs
	_, err = listAll(ctx, cs)
	return err
}

func (d *directConn) close() {
	if d.cs != nil {
		d.cs.Close()
	}
	if d.g != nil {
		d.g.Terminate()
		<-d.g.Gone()
	}
}

// runDirect is the comparison of section 5: n direct SDK sessions (idle
// memory), then all servers dropped at once and every host reconnecting
// by hand (wait for the loss, close, reconnect, list: no delay).
func runDirect(ctx context.Context, n int) (heapPer, gorPer float64, cpuPer, total time.Duration, err error) {
	h0, g0 := heapAlloc(), goroutines()
	conns := make([]*directConn, n)
	defer func() {
		var wg sync.WaitGroup
		for _, c := range conns {
			if c != nil {
				wg.Go(c.close)
			}
		}
		wg.Wait()
	}()
	for i := range conns {
		conns[i] = &directConn{mem: transport.NewMemory("echo")}
		if err := conns[i].connect(ctx, 1); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	h1, g1 := heapAlloc(), goroutines()
	heapPer, gorPer = (float64(h1)-float64(h0))/float64(n), float64(g1-g0)/float64(n)

	cpu0, t0 := cpuTime(), time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range conns {
		old, oldG := c.cs, c.g
		wg.Go(func() {
			c.mem.Gen(1).Kill()
			old.Wait()
			old.Close()
			oldG.Terminate()
			<-oldG.Gone()
			c.cs, c.g = nil, nil
			if err := c.connect(ctx, 2); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total, cpuPer = time.Since(t0), (cpuTime()-cpu0)/time.Duration(n)
	return heapPer, gorPer, cpuPer, total, errors.Join(errs...)
}

// runFleet starts n supervisors over in-memory servers with the given
// jitter, measures them idle, then kills every current generation at once
// and follows the reconnect herd until all are established again.
func runFleet(ctx context.Context, cfg Config, jitter float64) (scaleRun, error) {
	run := scaleRun{jitter: jitter}
	n := cfg.Supervisors
	policy := backoff.Policy{Enabled: true, InitialDelay: cfg.ScaleDelay, MaxDelay: 30 * time.Second, MaxAttempts: 10, Jitter: jitter}
	var (
		armed    atomic.Bool
		mu       sync.Mutex
		arrivals []time.Time
		released []time.Time
		sched    []time.Time
		back     atomic.Int64
		done     = make(chan struct{})
	)
	observe := func(t mcpkeep.Transition) {
		if !armed.Load() {
			return
		}
		now := time.Now()
		switch {
		case t.Event == fsm.RetryDue:
			mu.Lock()
			arrivals = append(arrivals, now)
			mu.Unlock()
		case t.To == fsm.BackingOff:
			mu.Lock()
			released, sched = append(released, now), append(sched, t.NextRetry)
			mu.Unlock()
		case t.To == fsm.Established && t.From != fsm.Established:
			if back.Add(1) == int64(n) {
				close(done)
			}
		}
	}
	h0, g0 := heapAlloc(), goroutines()
	type member struct {
		s   *mcpkeep.Supervisor
		mem *transport.Memory
	}
	fleet := make([]member, 0, n)
	defer func() {
		var wg sync.WaitGroup
		for _, m := range fleet {
			wg.Go(func() {
				dctx, cancel := within(context.Background())
				defer cancel()
				_ = m.s.Dispose(dctx)
			})
		}
		wg.Wait()
	}()
	for i := range n {
		mem := transport.NewMemory("echo")
		s, err := mcpkeep.New(mcpkeep.Options{Name: fmt.Sprintf("s%04d", i), Opener: mem, Policy: policy})
		if err != nil {
			return run, err
		}
		s.Subscribe(observe)
		if err := s.Start(ctx); err != nil {
			return run, err
		}
		fleet = append(fleet, member{s, mem})
	}
	for _, m := range fleet {
		if st := m.s.State().State; st != fsm.Established {
			return run, fmt.Errorf("%s: %s after Start", m.s.Name(), st)
		}
	}
	h1, g1 := heapAlloc(), goroutines()
	run.heapPer, run.goroutinesP = (float64(h1)-float64(h0))/float64(n), float64(g1-g0)/float64(n)

	armed.Store(true)
	// Kill concurrently: one server's Kill waits for its session to
	// close, and in a row they would spread the drop over the kill loop.
	gens := make([]*transport.MemGen, len(fleet))
	for i, m := range fleet {
		gens[i] = m.mem.Gen(m.s.State().Gen)
	}
	var kills sync.WaitGroup
	cpu0, t0 := cpuTime(), time.Now()
	for _, g := range gens {
		kills.Go(g.Kill)
	}
	kills.Wait()
	run.killSpan = time.Since(t0)
	limit := time.NewTimer(cfg.ScaleDelay + 60*time.Second)
	defer limit.Stop()
	select {
	case <-done:
	case <-limit.C:
		return run, fmt.Errorf("only %d of %d supervisors re-established", back.Load(), n)
	}
	run.settled, run.cpu = time.Since(t0), cpuTime()-cpu0
	mu.Lock()
	run.arrivals, run.released, run.scheduled = arrivals, released, sched
	mu.Unlock()
	if len(run.arrivals) != n {
		return run, fmt.Errorf("%d retries for %d supervisors", len(run.arrivals), n)
	}
	return run, nil
}

// runScale is section 5.
func runScale(ctx context.Context, cfg Config) (*scaleResult, error) {
	res := &scaleResult{n: cfg.Supervisors, delay: cfg.ScaleDelay}
	var err error
	res.directHeap, res.directGor, res.directCPU, res.directTotal, err = runDirect(ctx, cfg.Supervisors)
	if err != nil {
		return nil, fmt.Errorf("direct sessions: %w", err)
	}
	cfg.progress("  %d direct sessions: done", cfg.Supervisors)
	for _, j := range []float64{0, 0.5} {
		run, err := runFleet(ctx, cfg, j)
		if err != nil {
			return nil, fmt.Errorf("fleet, jitter %.1f: %w", j, err)
		}
		res.runs = append(res.runs, run)
		cfg.progress("  %d supervisors, jitter %.1f: done", cfg.Supervisors, j)
	}
	return res, nil
}
