package otelkeep

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkHop is one host tools/call through the proxy (in process, an
// in-memory server, the fast path) with tracing off and on, sampling every
// request (docs/design.md §27). The host sends a traceparent in both.
func BenchmarkHop(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchHop(b, proxy.Options{}, true) })
	b.Run("off-no-traceparent", func(b *testing.B) { benchHop(b, proxy.Options{}, false) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discard{}))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		benchHop(b, proxy.Options{Tracer: New(tp)}, true)
	})
}

// discard is an exporter that drops the spans.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

func benchHop(b *testing.B, opts proxy.Options, traceparent bool) {
	mem := transport.NewMemory("echo")
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"m": map[string]any{"command": "mem"}}})
	cfg, _, err := config.Parse(raw, nil)
	if err != nil {
		b.Fatal(err)
	}
	opts.Pool.Opener = func(config.Server) (transport.Opener, error) { return mem, nil }
	srv := proxy.New(cfg, opts)
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, st) }()
	defer func() {
		cancel()
		<-served
		_ = srv.Shutdown(context.Background())
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if !traceparent {
		params.Meta = nil
	}
	if _, err := cs.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}
