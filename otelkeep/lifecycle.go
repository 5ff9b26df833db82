package otelkeep

import (
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// SpanTransition names the short span of a connection's lifecycle
// transition (docs/design.md §27).
const SpanTransition = "mcpkeep.transition"

// Observer returns an observer that records each change of a server's
// lifecycle state (lost, backing-off with its delay, established, idle,
// exhausted...) as a short span of its own: a transition belongs to no
// request. It records the event, the states, the generation, the attempt
// and the retry delay; never the error's text (it may quote a command
// line), only whether there was one. Transitions that keep the state
// (list changes) are left out.
func (t *Tracer) Observer() mcpkeep.Observer {
	return func(tr mcpkeep.Transition) {
		if tr.From == tr.To {
			return
		}
		attrs := []attribute.KeyValue{
			attribute.String(AttrServer, tr.Server),
			attribute.Int64(AttrGeneration, int64(tr.Gen)),
			attribute.String("mcpkeep.event", tr.Event.String()),
			attribute.String("mcpkeep.from", tr.From.String()),
			attribute.String("mcpkeep.to", tr.To.String()),
			attribute.Int(AttrAttempt, tr.Attempt),
		}
		if tr.To == fsm.BackingOff && !tr.NextRetry.IsZero() {
			attrs = append(attrs, attribute.Int64("mcpkeep.retry_delay_ms", tr.NextRetry.Sub(tr.At).Milliseconds()))
		}
		if tr.Err != nil {
			attrs = append(attrs, attribute.Bool("mcpkeep.error", true))
		}
		_, span := t.t.Start(t.ctxBase, SpanTransition+" "+tr.To.String(), trace.WithTimestamp(tr.At),
			trace.WithNewRoot(), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(tr.At))
	}
}
