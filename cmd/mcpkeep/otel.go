package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/otelkeep"
	"github.com/mcpkeep/mcpkeep/proxy"
)

// otelFlushBound bounds the export of the spans left at exit (within the
// shutdown's own deadline, docs/design.md §27).
const otelFlushBound = 5 * time.Second

// startTracing turns OpenTelemetry tracing on when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (OTLP over HTTP; the exporter reads the other OTEL_* variables), and
// returns what flushes the spans left at exit. Off, it does nothing.
func startTracing(opts *proxy.Options, log *slog.Logger) (flush func()) {
	t, shutdown, err := otelkeep.FromEnv(context.Background(), resolveVersion())
	if err != nil {
		log.Warn("tracing off", slog.Any("err", err))
		return func() {}
	}
	if t == nil {
		return func() {}
	}
	opts.Tracer = t
	opts.Pool.Observer = mcpkeep.Observers(opts.Pool.Observer, t.Observer())
	log.Info("tracing on (OTLP/HTTP)")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), otelFlushBound)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("spans not exported", slog.Any("err", err))
		}
	}
}
