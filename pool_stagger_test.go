package mcpkeep

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// Servers listed from the cache start after Apply returns, staggerSlots()
// at a time, each slot held until the first attempt settles; a request for
// a server still held starts it at once (docs/design.md §20). Before,
// every server of an Apply spawned at once: fifty servers starting on two
// cores delayed the host's first answers past the slowest cold connect.
func TestPoolStaggersCachedStarts(t *testing.T) {
	defer func(f func() int) { staggerSlots = f }(staggerSlots)
	staggerSlots = func() int { return 1 }
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	names := []string{"a", "b", "c", "d"}
	cache := catalogcache.New(t.TempDir())
	gates := map[string]chan struct{}{}
	o := newMemOpeners()
	var servers []config.Server
	for _, name := range names {
		sc := memServer(name)
		if err := cache.For(sc, catalogcache.Declared{}).Save(memEntry("echo", "hang")); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, sc)
		gate := make(chan struct{})
		gates[name] = gate
		o.faults[name] = func(uint64) transport.Fault { return transport.Fault{Gate: gate} }
	}
	p := newTestPool(t, o, PoolOptions{Cache: cache})
	defer func() {
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	}()
	if err := p.Apply(ctx, &config.Config{Servers: servers}); err != nil {
		t.Fatal(err)
	}
	opened := func(name string) {
		t.Helper()
		select {
		case <-o.last(name).Opened():
		case <-ctx.Done():
			t.Fatalf("%s was not started", name)
		}
	}
	// The first slot: a connects (held at its gate); b, c, d wait.
	opened("a")
	// A request for d starts it at once, out of turn.
	called := make(chan error, 1)
	go func() {
		_, err := p.Call(ctx, "d__echo", map[string]any{"text": "x"}, nil)
		called <- err
	}()
	opened("d")
	for _, name := range []string{"b", "c"} {
		if g := o.last(name).Gen(1); g != nil {
			t.Fatalf("%s started while the only slot was a's", name)
		}
	}
	close(gates["d"])
	if err := <-called; err != nil {
		t.Fatalf("call of the server started for it: %v", err)
	}
	// a's first attempt settles: b takes the slot, then c.
	close(gates["a"])
	opened("b")
	if g := o.last("c").Gen(1); g != nil {
		t.Fatal("c started while b held the slot")
	}
	close(gates["b"])
	opened("c")
	close(gates["c"])
	for _, name := range names {
		sup, _ := p.Supervisor(name)
		waitState(t, sup, "established", func(s Snapshot) bool { return s.State == fsm.Established })
	}
}

// A pool disposed while servers wait for their stagger slot starts none
// of them, and returns.
func TestPoolDisposeDuringStagger(t *testing.T) {
	defer func(f func() int) { staggerSlots = f }(staggerSlots)
	staggerSlots = func() int { return 1 }
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	cache := catalogcache.New(t.TempDir())
	o := newMemOpeners()
	never := make(chan struct{})
	var servers []config.Server
	for _, name := range []string{"a", "b", "c"} {
		sc := memServer(name)
		if err := cache.For(sc, catalogcache.Declared{}).Save(memEntry("echo")); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, sc)
		o.faults[name] = func(uint64) transport.Fault { return transport.Fault{Gate: never} }
	}
	p := NewPool(PoolOptions{Cache: cache, Opener: o.open})
	if err := p.Apply(ctx, &config.Config{Servers: servers}); err != nil {
		t.Fatal(err)
	}
	<-o.last("a").Opened()
	start := time.Now()
	if err := p.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > poolDeadline/2 {
		t.Errorf("Dispose took %v", d)
	}
	for _, name := range []string{"b", "c"} {
		if g := o.last(name).Gen(1); g != nil {
			t.Errorf("%s was started by a disposed pool", name)
		}
	}
}

// TestPoolHoldStartsUntilReleased (docs/design.md §20): with HoldStarts
// the cached servers' staggered start waits until it is closed (a proxy's
// host has its first lists), at most StartHoldMax.
func TestPoolHoldStartsUntilReleased(t *testing.T) {
	for _, release := range []string{"closed", "bound"} {
		t.Run(release, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				cache := catalogcache.New(t.TempDir())
				o := newMemOpeners()
				sc := memServer("a")
				if err := cache.For(sc, catalogcache.Declared{}).Save(memEntry("echo")); err != nil {
					t.Fatal(err)
				}
				hold := make(chan struct{})
				p := newTestPool(t, o, PoolOptions{Cache: cache, HoldStarts: hold})
				if err := p.Apply(ctx, &config.Config{Servers: []config.Server{sc}}); err != nil {
					t.Fatal(err)
				}
				opened := func() bool {
					select {
					case <-o.last("a").Opened():
						return true
					default:
						return false
					}
				}
				synctest.Wait()
				if opened() {
					t.Fatal("a cached server started while its start was held")
				}
				if release == "closed" {
					close(hold)
				} else {
					time.Sleep(StartHoldMax - time.Millisecond)
					synctest.Wait()
					if opened() {
						t.Fatal("started before the hold's bound")
					}
					time.Sleep(time.Millisecond)
				}
				synctest.Wait()
				if !opened() {
					t.Fatalf("a was not started once the hold was %s", release)
				}
			})
		})
	}
}
