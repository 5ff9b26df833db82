package proxy

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func defs(t *testing.T, server string, names ...string) []tools.Tool {
	t.Helper()
	var list []*mcp.Tool
	for _, n := range names {
		list = append(list, &mcp.Tool{Name: n, Description: "tool " + n, InputSchema: map[string]any{"type": "object"}})
	}
	d, err := tools.Build(server, list, nil, tools.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// upstreamHost is the proxy's upstream server with a host connected over
// in-memory transports, counting the host's list_changed.
type upstreamHost struct {
	set     *tools.Set
	cs      *mcp.ClientSession
	ss      *mcp.ServerSession
	changes atomic.Int32
}

func newUpstreamHost(t *testing.T, pool *mcpkeep.Pool, set *tools.Set) *upstreamHost {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpkeep", Version: "test"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	up := newUpstream(newRelayPath(srv, func() *mcpkeep.Pool { return pool }, &hostLink{}, slog.New(slog.DiscardHandler)))
	t.Cleanup(set.Subscribe(up.apply))
	h := &upstreamHost{set: set}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.changes.Add(1) },
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.cs, h.ss = cs, ss
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return h
}

func (h *upstreamHost) names(t *testing.T) string {
	t.Helper()
	res, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, tl := range res.Tools {
		n = append(n, tl.Name)
	}
	slices.Sort(n)
	return strings.Join(n, " ")
}

// TestUpstreamOneSwapOneNotification: each atomic swap of a server's tools
// reaches the host as exactly one list_changed (the SDK debounces the
// AddTool/RemoveTools batch by 10 ms), and an unchanged swap as none. The
// bubble's fake clock makes "no further notification" a checkable fact.
func TestUpstreamOneSwapOneNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set := tools.NewSet(tools.Limits{})
		h := newUpstreamHost(t, mcpkeep.NewPool(mcpkeep.PoolOptions{Sink: set}), set)
		settle := func() { synctest.Wait(); time.Sleep(time.Second); synctest.Wait() }
		if err := set.Reserve("s"); err != nil {
			t.Fatal(err)
		}
		step := func(what string, apply func() error, wantChanges int32, wantNames string) {
			t.Helper()
			if err := apply(); err != nil {
				t.Fatal(err)
			}
			settle()
			if n := h.changes.Load(); n != wantChanges {
				t.Errorf("%s: %d list_changed in all, want %d", what, n, wantChanges)
			}
			if got := h.names(t); got != wantNames {
				t.Errorf("%s: tools %q, want %q", what, got, wantNames)
			}
		}
		step("first registration", func() error { return set.Replace("s", 1, defs(t, "s", "a", "b", "c")) }, 1, "s__a s__b s__c")
		step("swap: 2 removed, 2 added, 1 kept", func() error { return set.Replace("s", 2, defs(t, "s", "a", "d", "e")) }, 2, "s__a s__d s__e")
		step("unchanged recovery", func() error { return set.Replace("s", 3, defs(t, "s", "a", "d", "e")) }, 2, "s__a s__d s__e")
		step("removal", func() error { set.Remove("s"); return nil }, 3, "")
	})
}

// TestUpstreamOutageResult: a call during an outage returns at once as a
// tool error naming the server, its state and the next retry.
func TestUpstreamOutageResult(t *testing.T) {
	mem := transport.NewMemory("echo")
	set := tools.NewSet(tools.Limits{})
	pool := mcpkeep.NewPool(mcpkeep.PoolOptions{Sink: set, Opener: func(config.Server) (transport.Opener, error) { return mem, nil }})
	t.Cleanup(func() { _ = pool.Dispose(context.Background()) })
	h := newUpstreamHost(t, pool, set)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	slow := backoff.Policy{Enabled: true, InitialDelay: time.Hour, MaxDelay: time.Hour, MaxAttempts: 5}
	if err := pool.Apply(ctx, &config.Config{Servers: []config.Server{{Name: "m", Transport: config.TransportStdio, Reconnect: slow, ConnectTimeout: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"text": "up"}})
	if err != nil || res.IsError || text(res) != "up" {
		t.Fatalf("echo: %v %q", err, text(res))
	}
	sup, _ := pool.Supervisor("m")
	mem.Gen(1).Kill()
	for sup.State().State != fsm.BackingOff {
		select {
		case <-sup.Changed():
		case <-ctx.Done():
			t.Fatal("never backing off")
		}
	}
	start := time.Now()
	res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"text": "down"}})
	if err != nil || !res.IsError {
		t.Fatalf("call during the outage: %v %+v", err, res)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v to fail", d)
	}
	want := `mcpkeep: server "m" is not connected (backing-off, retry 1 of 5, next retry in `
	if got := text(res); !strings.HasPrefix(got, want) || !strings.Contains(got, "try again shortly") {
		t.Errorf("result %q\nwant it to start with %q", got, want)
	}
}
