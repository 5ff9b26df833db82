package proxy

import (
	"context"
	"errors"
	"strings"
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
	if err := cache.For(sc).Save(&catalogcache.Entry{Listed: true,
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

// A lazy server's demand start that fails is that server's fault: its own
// line of /readyz says so, and the process stays ready while the others
// are (docs/design.md §20). Before, the first request to a lazy server
// never established made the whole process not ready until it connected,
// and for as long as its start kept failing.
func TestReadinessLazyStartFailureIsItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cache := catalogcache.New(t.TempDir())
	lazy := config.Server{Name: "lazy", Transport: config.TransportStdio, Command: "mem", Lazy: true, ConnectTimeout: time.Second}
	eager := config.Server{Name: "eager", Transport: config.TransportStdio, Command: "mem", ConnectTimeout: time.Second}
	if err := cache.For(lazy).Save(&catalogcache.Entry{Listed: true,
		Tools: []*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}}); err != nil {
		t.Fatal(err)
	}
	h := NewHealth()
	h.Expect([]string{"lazy", "eager"})
	pool := mcpkeep.NewPool(mcpkeep.PoolOptions{Cache: cache, Observer: h.Observer(),
		Opener: func(sc config.Server) (transport.Opener, error) {
			m := transport.NewMemory("echo")
			if sc.Name == "lazy" {
				m.Fault = func(uint64) transport.Fault { return transport.Fault{OpenErr: errors.New("spawn refused")} }
			}
			return m, nil
		}})
	defer pool.Dispose(ctx)
	if err := pool.Apply(ctx, &config.Config{Servers: []config.Server{lazy, eager}}); err != nil {
		t.Fatal(err)
	}
	if rep := h.Readiness(pool); !rep.Ready {
		t.Fatalf("before the demand: %+v", rep)
	}
	if _, err := pool.Call(ctx, "lazy__echo", map[string]any{}, nil); err == nil {
		t.Fatal("a call to a lazy server whose start fails succeeded")
	}
	rep := h.Readiness(pool)
	if !rep.Ready {
		t.Fatalf("one lazy server's failing start took readiness away: %s", rep.Reason)
	}
	for _, s := range rep.Servers {
		switch s.Server {
		case "lazy":
			if s.Ready || !strings.Contains(s.NotReady, "lazy has not been established yet") {
				t.Errorf("the lazy server's own line: %+v", s)
			}
		case "eager":
			if !s.Ready || s.NotReady != "" {
				t.Errorf("the eager server's line: %+v", s)
			}
		}
	}
}
