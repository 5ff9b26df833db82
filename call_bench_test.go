package mcpkeep

import (
	"context"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall compares a supervised Call with a direct
// ClientSession.CallTool over the same kind of in-memory server, measured
// side by side in one run (issue 9: ratio ≤ 1.05, ≤ 2 extra allocations),
// for three callers: one whose context can never be cancelled, one that
// keeps one cancellable context for every call, and one with a fresh
// cancellable context per call (made and cancelled around each call on
// both sides alike).
func BenchmarkCall(b *testing.B) {
	kept, cancel := context.WithCancel(context.Background())
	defer cancel()
	none := func() {}
	for _, caller := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), none }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return kept, none }},
		{"fresh", func() (context.Context, context.CancelFunc) { return context.WithCancel(kept) }},
	} {
		b.Run(caller.name, func(b *testing.B) { benchCall(b, caller.ctx) })
	}
}

func benchCall(b *testing.B, callerCtx func() (context.Context, context.CancelFunc)) {
	args := map[string]any{"text": "x"}
	b.Run("direct", func(b *testing.B) {
		mem := transport.NewMemory("echo")
		g, err := mem.Open(context.Background(), 1)
		if err != nil {
			b.Fatal(err)
		}
		// The same client configuration as the supervisor's: a list_changed
		// handler makes the SDK hold a subscriptions/listen stream open.
		// The supervisor's own client identity and capabilities too (none,
		// without host handlers): on 2026-07-28 the server decodes both
		// from every request's _meta, so either changes the allocations
		// (the SDK's default roots capability costs 18 a call).
		c := mcp.NewClient(&mcp.Implementation{Name: "mcpkeep", Version: Version}, &mcp.ClientOptions{
			Capabilities:           &mcp.ClientCapabilities{},
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		})
		cs, err := c.Connect(context.Background(), g.Transport(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cs.Close(); g.Terminate(); <-g.Gone() }()
		// Like the supervisor (and any host), list the tools first: the
		// SDK then knows the tools' schemas, which changes a call's cost.
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			ctx, cancel := callerCtx()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("supervised", func(b *testing.B) {
		s, err := New(Options{Name: "bench", Opener: transport.NewMemory("echo")})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		defer s.Dispose(context.Background())
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			ctx, cancel := callerCtx()
			_, err := s.Call(ctx, "echo", args, nil)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
