package mcpkeep

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// A pool's lazy server with a cached catalog is idle after Apply, its
// catalog routable; a call starts it. A reload that changes an idle server
// disposes it at once (nothing to wait for) and starts the new one; a
// reload that removes it disposes it (docs/design.md §20).
func TestIdleServerReload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	cache := catalogcache.New(t.TempDir())
	a := memServer("a")
	a.Lazy = true
	if err := cache.For(a, catalogcache.Declared{}).Save(memEntry("echo", "hang")); err != nil {
		t.Fatal(err)
	}
	o := newMemOpeners()
	p := newTestPool(t, o, PoolOptions{Cache: cache})
	if err := p.Apply(ctx, &config.Config{Servers: []config.Server{a}}); err != nil {
		t.Fatal(err)
	}
	sup, _ := p.Supervisor("a")
	if st := sup.State(); st.State != fsm.Idle || !st.Cached || !st.Lazy {
		t.Fatalf("after Apply: %+v", st)
	}
	if o.last("a").Gen(1) != nil {
		t.Fatal("an idle server was spawned")
	}

	// Changed while idle: the old supervisor drains at once, the new one
	// (a new identity: no cache) starts to learn its catalog.
	b := memServer("a", "v2")
	b.Lazy = true
	if err := p.Apply(ctx, &config.Config{Servers: []config.Server{b}}); err != nil {
		t.Fatal(err)
	}
	if st := sup.State(); st.State != fsm.Disposed {
		t.Fatalf("the changed idle server: %s", st.State)
	}
	sup2, _ := p.Supervisor("a")
	if st := sup2.State(); st.State != fsm.Established {
		t.Fatalf("the new server: %+v", st)
	}
	if e, err := cache.For(b, catalogcache.Declared{}).Load(); err != nil || e == nil || !e.Listed {
		t.Fatalf("the new server's catalog was not cached: %v %v", e, err)
	}
	// A call of the cached name goes through (routed to the new server).
	if _, err := p.Call(ctx, "a__echo", map[string]any{"text": "x"}, nil); err != nil {
		t.Fatal(err)
	}

	// Removed while idle.
	c := memServer("a", "v3")
	c.Lazy = true
	if err := cache.For(c, catalogcache.Declared{}).Save(memEntry("echo")); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, &config.Config{Servers: []config.Server{c}}); err != nil {
		t.Fatal(err)
	}
	sup3, _ := p.Supervisor("a")
	if st := sup3.State(); st.State != fsm.Idle {
		t.Fatalf("third: %+v", st)
	}
	if err := p.Apply(ctx, &config.Config{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sup3.Done():
	case <-time.After(poolDeadline):
		t.Fatal("a removed idle server was not disposed")
	}
	if _, ok := p.Supervisor("a"); ok {
		t.Fatal("removed server still in the pool")
	}
}

// Every cached catalog is registered before any server of an Apply
// spawns (Supervisor.prepare): a host's first answers do not wait behind
// the servers' start-up.
func TestPoolRegistersHintsBeforeSpawning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	cache := catalogcache.New(t.TempDir())
	var servers []config.Server
	for _, name := range []string{"a", "b", "c", "d"} {
		sc := memServer(name)
		if err := cache.For(sc, catalogcache.Declared{}).Save(memEntry("echo", "hang")); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, sc)
	}
	set := tools.NewSet(tools.Limits{})
	var mu sync.Mutex
	var seenAtOpen []int
	o := newMemOpeners()
	open := o.open
	p := NewPool(PoolOptions{Cache: cache, Sink: set, Opener: func(sc config.Server) (transport.Opener, error) {
		op, err := open(sc)
		m := op.(*transport.Memory)
		m.Fault = func(uint64) transport.Fault {
			mu.Lock()
			seenAtOpen = append(seenAtOpen, len(set.List()))
			mu.Unlock()
			return transport.Fault{}
		}
		return m, err
	}})
	defer p.Dispose(ctx)
	if err := p.Apply(ctx, &config.Config{Servers: servers}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		sup, _ := p.Supervisor(name)
		waitState(t, sup, "established", func(s Snapshot) bool { return s.State == fsm.Established })
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range seenAtOpen {
		if n != 8 {
			t.Fatalf("a server spawned with %d of 8 cached tools registered (%v)", n, seenAtOpen)
		}
	}
}
