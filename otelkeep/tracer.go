package otelkeep

import (
	"context"
	"errors"

	"github.com/mcpkeep/mcpkeep"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of mcpkeep's own (docs/design.md §27); the others follow
// the MCP semantic conventions.
const (
	AttrServer       = "mcpkeep.server"
	AttrGeneration   = "mcpkeep.generation"
	AttrAttempt      = "mcpkeep.attempt"
	AttrReplayReason = "mcpkeep.replay.reason"
	AttrWaitReason   = "mcpkeep.wait.reason"
	SpanWait         = "mcpkeep.wait_for_recovery"
)

// Tracer is an mcpkeep.Tracer over an OpenTelemetry tracer. It records
// names, servers, generations and outcomes, never arguments, results or
// URLs.
type Tracer struct {
	t       trace.Tracer
	prop    propagation.TextMapPropagator
	ctxBase context.Context // the transitions' (no parent)
}

// New returns a Tracer whose spans tp makes.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{
		t:       tp.Tracer("github.com/mcpkeep/mcpkeep"),
		prop:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		ctxBase: context.Background(),
	}
}

var _ mcpkeep.Tracer = (*Tracer)(nil)

// StartRequest starts the SERVER span of a host's request, a child of the
// host's trace context when it sent one.
func (t *Tracer) StartRequest(ctx context.Context, r mcpkeep.RequestInfo, tc mcpkeep.TraceContext) (context.Context, mcpkeep.RequestTrace, func(error)) {
	ctx = t.prop.Extract(ctx, carrier(tc))
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", r.Method)}
	name := r.Method
	if r.Name != "" && r.Method != "resources/read" {
		name += " " + r.Name
		if r.Method == "tools/call" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", r.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
		} else {
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", r.Name))
		}
	}
	if r.Server != "" {
		attrs = append(attrs, attribute.String(AttrServer, r.Server))
	}
	if r.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", r.Session))
	}
	if r.Era != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", r.Era))
	}
	ctx, span := t.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	rt := &requestTrace{t: t, ctx: ctx, name: name}
	return ctx, rt, func(err error) { endSpan(span, err) }
}

// requestTrace is the hooks of one request: its attempts are CLIENT spans
// under its span; a replay links to the attempt it repeats.
type requestTrace struct {
	t     *Tracer
	ctx   context.Context // with the request's span
	name  string
	first trace.SpanContext // the latest attempt's
}

func (rt *requestTrace) StartAttempt(a mcpkeep.Attempt, tc *mcpkeep.TraceContext) func(error) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(AttrServer, a.Server),
		attribute.Int64(AttrGeneration, int64(a.Generation)),
		attribute.Int(AttrAttempt, a.N),
		attribute.String("mcp.method.name", a.Method),
	)}
	if a.ReplayOf != nil {
		opts = append(opts, trace.WithAttributes(attribute.String(AttrReplayReason, reason(a.ReplayOf))))
		if rt.first.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: rt.first,
				Attributes: []attribute.KeyValue{attribute.String(AttrReplayReason, reason(a.ReplayOf))}}))
		}
	}
	ctx, span := rt.t.t.Start(rt.ctx, rt.name, opts...)
	rt.first = span.SpanContext()
	c := carrier(*tc)
	rt.t.prop.Inject(ctx, c)
	tc.Traceparent, tc.Tracestate = c[mcpkeep.MetaKeyTraceparent], c[mcpkeep.MetaKeyTracestate]
	if b := c[mcpkeep.MetaKeyBaggage]; b != "" {
		tc.Baggage = b
	}
	return func(err error) { endSpan(span, err) }
}

func (rt *requestTrace) StartWait(server, why string) func() {
	_, span := rt.t.t.Start(rt.ctx, SpanWait, trace.WithAttributes(
		attribute.String(AttrServer, server), attribute.String(AttrWaitReason, why)))
	return func() { span.End() }
}

// reason names a loss without its text (which may carry a command line).
func reason(err error) string {
	if errors.Is(err, mcpkeep.ErrConnectionLost) {
		return "connection_lost"
	}
	return "other"
}

// endSpan ends span with err's outcome: error.type is the JSON-RPC
// code's kind or tool_error; the error's text is not recorded (it may
// quote arguments).
func endSpan(span trace.Span, err error) {
	if err != nil {
		kind := "error"
		switch {
		case errors.Is(err, mcpkeep.ErrToolResult):
			kind = "tool_error"
		case errors.Is(err, mcpkeep.ErrConnectionLost):
			kind = "connection_lost"
		case errors.Is(err, context.Canceled):
			kind = "cancelled"
		case errors.Is(err, context.DeadlineExceeded):
			kind = "timeout"
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.SetStatus(codes.Error, kind)
	}
	span.End()
}

// carrier is a TraceContext as a propagation carrier.
type mapCarrier map[string]string

func carrier(tc mcpkeep.TraceContext) mapCarrier {
	c := mapCarrier{}
	if tc.Traceparent != "" {
		c[mcpkeep.MetaKeyTraceparent] = tc.Traceparent
	}
	if tc.Tracestate != "" {
		c[mcpkeep.MetaKeyTracestate] = tc.Tracestate
	}
	if tc.Baggage != "" {
		c[mcpkeep.MetaKeyBaggage] = tc.Baggage
	}
	return c
}

func (c mapCarrier) Get(k string) string { return c[k] }
func (c mapCarrier) Set(k, v string)     { c[k] = v }
func (c mapCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
