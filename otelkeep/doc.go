// Package otelkeep implements mcpkeep's tracing hooks (mcpkeep.Tracer,
// mcpkeep.RequestTrace) with OpenTelemetry, and exports the spans over
// OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* variables ask for it
// (docs/design.md §27). The library itself imports no OpenTelemetry.
package otelkeep
