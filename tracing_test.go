package mcpkeep

import (
	"encoding/json"
	"testing"
)

// The raw path's params carry the caller's trace context beside the other
// _meta members, as valid JSON (docs/design.md §27).
func TestRawParamsCarryTraceContext(t *testing.T) {
	tc := TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: `a="b"`, Baggage: "u=1"}
	for _, c := range []struct {
		name  string
		call  rawToolCall
		token string
	}{
		{"alone", rawToolCall{name: "t", trace: tc}, ""},
		{"token", rawToolCall{name: "t", trace: tc}, "7"},
		{"session meta and level", rawToolCall{name: "t", trace: tc, level: "info",
			meta: []byte(`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`)}, "7"},
		{"traceparent only", rawToolCall{name: "t", trace: TraceContext{Traceparent: tc.Traceparent}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.call.params(c.token)
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Meta map[string]any `json:"_meta"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("params %s: %v", b, err)
			}
			want := c.call.trace
			if got := TraceContextFromMeta(p.Meta); got != want {
				t.Errorf("params %s carry %+v, want %+v", b, got, want)
			}
			if c.token != "" && p.Meta["progressToken"] != c.token {
				t.Errorf("params %s lost the progress token", b)
			}
			if len(c.call.meta) > 0 && p.Meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
				t.Errorf("params %s lost the session's _meta", b)
			}
		})
	}
	b, _ := (&rawToolCall{name: "t"}).params("")
	if string(b) != `{"name":"t"}` {
		t.Errorf("params without a trace context: %s", b)
	}
}
