package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An idle server (lazy, listed from its cache, never started) is ready:
// it is at rest, and the next request starts it (docs/design.md §20).
func TestReadinessIdleIsReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cache := catalogcache.New(t.TempDir())
	sc := config.Server{Name: "lazy", Transport: config.TransportStdio, Command: "mem", Lazy: true, ConnectTimeout: time.Second}
	if err := cache.For(sc, catalogcache.Declared{}).Save(&catalogcache.Entry{Listed: true,
		Tools: []*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}}); err != nil {
		t.Fatal(err)
	}
	pool := mcpkeep.NewPool(mcpkeep.PoolOptions{Cache: cache,
		Opener: func(config.Server) (transport.Opener, error) { return transport.NewMemory("echo"), nil }})
	defer pool.Dispose(ctx)
	if err := pool.Apply(ctx, &config.Config{Servers: []config.Server{sc}}); err != nil {
		t.Fatal(err)
	}
	h := NewHealth()
	h.Expect([]string{"lazy"})
	rep := h.Readiness(pool)
	if !rep.Ready || len(rep.Servers) != 1 || rep.Servers[0].State != "idle" ||
		rep.Servers[0].Start != "lazy" || !rep.Servers[0].Cached || rep.Servers[0].Tools != 1 {
		t.Fatalf("readiness with an idle server: %+v", rep)
	}
}
