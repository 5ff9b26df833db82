package benchsuite

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// leanMemory opens each generation from a fresh transport.Memory and keeps
// only the current one. A single transport.Memory keeps every generation
// it ever opened (tests inspect them), which a 10,000-cycle soak would
// report as heap growth that is not the supervisor's.
type leanMemory struct {
	mu       sync.Mutex
	cur      *ackGen
	opens    int
	overlaps int // opens while the previous generation was not gone (I1)
}

func (o *leanMemory) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	g, err := transport.NewMemory("echo").Open(ctx, gen)
	if err != nil {
		return nil, err
	}
	ag := &ackGen{MemGen: g.(*transport.MemGen), acked: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur != nil && !isClosed(o.cur.Gone()) {
		o.overlaps++
	}
	o.cur, o.opens = ag, o.opens+1
	return ag, nil
}

// kill closes the current generation's server side (MemGen.Kill), once
// the server has acknowledged the session's subscriptions/listen.
//
// go-sdk v1.8.0 registers an in-flight subscriptions/listen with its
// ServerSession (so that Close can cancel it) only after the request was
// handed to its own goroutine (mcp/server.go, ServerSession.handle:
// jsonrpc2.Async, then the listenIDs append). A Close in between misses
// it, then waits for it forever. The supervisor is established once
// tools/list returns, which can be before that, so killing at once can
// hang the server side; the acknowledgement proves the registration.
func (o *leanMemory) kill() error {
	o.mu.Lock()
	g := o.cur
	o.mu.Unlock()
	select {
	case <-g.acked:
	case <-time.After(waitLimit):
		return fmt.Errorf("gen %d: no subscriptions/acknowledged within %s", g.Number(), waitLimit)
	}
	g.Kill()
	return nil
}

// ackGen is a MemGen whose client side closes acked when the server's
// notifications/subscriptions/acknowledged arrives.
type ackGen struct {
	*transport.MemGen
	acked chan struct{}
	once  sync.Once
}

func (g *ackGen) Transport() mcp.Transport { return ackTransport{g} }

type ackTransport struct{ g *ackGen }

func (t ackTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.g.MemGen.Transport().Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ackConn{Connection: c, g: t.g}, nil
}

type ackConn struct {
	mcp.Connection
	g *ackGen
}

func (c *ackConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/subscriptions/acknowledged" {
		c.g.once.Do(func() { close(c.g.acked) })
	}
	return m, err
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// heapAlloc is the live heap after two collections (the second clears
// sync.Pool victims).
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// goroutines is the goroutine count once it has stopped moving: the same
// value 5 times in a row, 10 ms apart (at most 3 s).
func goroutines() int {
	last, same := runtime.NumGoroutine(), 0
	deadline := time.Now().Add(3 * time.Second)
	for same < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

// memSoakResult is section 4's in-memory half.
type memSoakResult struct {
	cycles                      int
	warmup                      int
	gPre, gBefore, gAfter, gEnd int
	hPre, hBefore, hAfter, hEnd uint64
	overlaps, opens             int
	dropped                     uint64
	elapsed                     time.Duration
}

var memSoakPolicy = backoff.Policy{Enabled: true, InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: backoff.MaxMaxAttempts}

// runMemSoak: cycles crash/recover cycles of one supervisor over in-memory
// servers on a mock clock. A cycle kills the current generation, waits for
// backing-off, advances the clock to the retry, and waits for established.
// Every 1,000 cycles the clock also passes the stability window, so the
// budget resets (the stable path is soaked too).
func runMemSoak(ctx context.Context, cfg Config) (*memSoakResult, error) {
	res := &memSoakResult{cycles: cfg.MemCycles, warmup: 100}
	res.gPre, res.hPre = goroutines(), heapAlloc()
	// Everything of the supervisor lives in memSoak: once it returns, only
	// res is left, so the figures after Dispose compare with before Start.
	if err := memSoak(ctx, cfg, res); err != nil {
		return nil, err
	}
	res.gEnd, res.hEnd = goroutines(), heapAlloc()
	return res, nil
}

func memSoak(ctx context.Context, cfg Config, res *memSoakResult) error {
	mock := clock.NewMock()
	o := &leanMemory{}
	r, err := newRig(ctx, mcpkeep.Options{Name: "soak", Opener: o, Policy: memSoakPolicy, Clock: mock})
	if err != nil {
		return err
	}
	defer r.close()
	cycle := func(i int) error {
		r.drain()
		if err := o.kill(); err != nil {
			return err
		}
		back, err := r.await(fsm.BackingOff)
		if err != nil {
			return err
		}
		mock.Add(back.tr.NextRetry.Sub(mock.Now()))
		if _, err := r.await(fsm.Established); err != nil {
			return err
		}
		if (i+1)%1000 == 0 {
			mock.Add(memSoakPolicy.StabilityWindow())
			if _, err := r.awaitFunc("stable", func(t mcpkeep.Transition) bool { return t.Event == fsm.Stable }); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range res.warmup {
		if err := cycle(i); err != nil {
			return fmt.Errorf("warm-up cycle %d: %w", i, err)
		}
	}
	res.gBefore, res.hBefore = goroutines(), heapAlloc()
	t0 := time.Now()
	for i := range res.cycles {
		if err := cycle(i); err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
		if (i+1)%1000 == 0 {
			cfg.progress("  in-memory soak: %d/%d cycles", i+1, res.cycles)
		}
	}
	res.elapsed = time.Since(t0)
	res.gAfter, res.hAfter = goroutines(), heapAlloc()
	res.dropped = r.s.Stats().Dropped
	res.opens, res.overlaps = o.opens, o.overlaps
	return nil
}

// procSoakResult is section 4's real-process half.
type procSoakResult struct {
	ctlSamples, ctlOver int64 // the sampler's positive control
	cycles              int
	fdBefore, fdAfter   int
	chBefore, chAfter   int
	zBefore, zAfter     int
	samples, overlaps   int64
	maxLive             int64
	period              time.Duration
	elapsed             time.Duration
}

// runProcSoak: cycles crash/recover cycles of one supervisor over the real
// fixture (tool die, then a WaitForReady call), sampling every period how
// many of its processes are alive at once.
func runProcSoak(ctx context.Context, cfg Config) (*procSoakResult, error) {
	res := &procSoakResult{cycles: cfg.ProcCycles, period: time.Millisecond}
	var err error
	if res.ctlSamples, res.ctlOver, err = samplerControl(ctx, res.period); err != nil {
		return nil, fmt.Errorf("sampler control: %w", err)
	}
	o := &pidOpener{Stdio: fixtureStdio("normal", 200*time.Millisecond, nil)}
	res.fdBefore = openFDs()
	res.chBefore, res.zBefore = children()
	smp := startSampler(o, res.period)
	r, err := newRig(ctx, mcpkeep.Options{Name: "soak", Opener: o, Policy: stdioPolicy})
	if err != nil {
		smp.Stop()
		return nil, err
	}
	t0 := time.Now()
	for i := range res.cycles {
		if _, err := crashCycle(ctx, r, nil, nil); err != nil {
			r.close()
			smp.Stop()
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if (i+1)%50 == 0 {
			cfg.progress("  process soak: %d/%d cycles", i+1, res.cycles)
		}
	}
	res.elapsed = time.Since(t0)
	r.close()
	smp.Stop()
	res.samples, res.overlaps, res.maxLive = smp.samples.Load(), smp.over1.Load(), smp.maxLive.Load()
	res.fdAfter = openFDs()
	res.chAfter, res.zAfter = children()
	return res, nil
}

// samplerControl proves the sampler sees an overlap when there is one: it
// opens two fixture processes at once, without a supervisor, and samples
// them for 20 ms.
func samplerControl(ctx context.Context, period time.Duration) (samples, over int64, err error) {
	o := &pidOpener{Stdio: fixtureStdio("normal", 200*time.Millisecond, nil)}
	var gens []transport.Generation
	defer func() {
		for _, g := range gens {
			g.Terminate()
			<-g.Gone()
		}
	}()
	for i := range 2 {
		g, err := o.Open(ctx, uint64(i+1))
		if err != nil {
			return 0, 0, err
		}
		gens = append(gens, g)
	}
	smp := startSampler(o, period)
	time.Sleep(20 * time.Millisecond)
	smp.Stop()
	return smp.samples.Load(), smp.over1.Load(), nil
}
