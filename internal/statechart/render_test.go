package statechart_test

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/statechart"
)

// The byte-for-byte check of the real tables is the drift test in
// internal/cmd/diagrams; these pin the syntax on a small chart, so a change
// to the renderer shows here in a few lines rather than as a diagram diff.

type node string

func (n node) String() string { return string(n) }
func (n node) Color() string  { return map[node]string{"a-b": "#111111", "c": "#222222"}[n] }
func (n node) Terminal() bool { return n == "c" }

type row struct {
	from, to node
	event    string
	guard    string
	internal bool
	carries  []string
}

func small() statechart.Chart {
	rows := []row{
		{from: "a-b", to: "a-b", event: "tick", guard: "g;1", internal: true},
		{from: "a-b", to: "c", event: "stop", carries: []string{"I1", "I2"}},
		{from: "a-b", to: "c", event: "x:y"},
	}
	return statechart.Build("HEADER", "small", []node{"a-b", "c"}, "a-b", rows, func(r row) statechart.Transition {
		return statechart.Transition{From: r.from.String(), To: r.to.String(), Internal: r.internal,
			Label: statechart.EdgeLabel(r.event, r.guard, r.internal, r.carries)}
	})
}

func TestDOT(t *testing.T) {
	want := "// HEADER\n" +
		"digraph small {\n" +
		"\trankdir=LR;\n" +
		"\tpad=0.3;\n" +
		"\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n" +
		"\tedge [fontname=\"Helvetica\", fontsize=10];\n" +
		"\t__start [shape=point, width=0.15, label=\"\"];\n" +
		"\t\"a-b\" [style=\"rounded,filled\", color=\"#111111\", fillcolor=\"#11111122\", penwidth=1.5];\n" +
		"\t\"c\" [shape=doublecircle, style=filled, color=\"#222222\", fillcolor=\"#22222222\", penwidth=1.5];\n" +
		"\t__start -> \"a-b\";\n" +
		"\t\"a-b\" -> \"a-b\" [label=\"tick [g;1] (internal)\", style=dashed];\n" +
		"\t\"a-b\" -> \"c\" [label=\"stop · I1,I2\"];\n" +
		"\t\"a-b\" -> \"c\" [label=\"x:y\"];\n" +
		"}\n"
	if got := statechart.DOT(small()); got != want {
		t.Errorf("DOT:\n%s\nwant:\n%s", got, want)
	}
}

func TestMermaid(t *testing.T) {
	want := "%% HEADER\n" +
		"stateDiagram-v2\n" +
		"    state \"a-b\" as a_b\n" +
		"    state \"c\" as c\n" +
		"    [*] --> a_b\n" +
		"    a_b --> a_b : tick [g#59;1] (internal)\n" +
		"    a_b --> c : stop · I1,I2\n" +
		"    a_b --> c : x#58;y\n" +
		"    c --> [*]\n"
	if got := statechart.Mermaid(small()); got != want {
		t.Errorf("Mermaid:\n%s\nwant:\n%s", got, want)
	}
}

// TestEdgeLabel: each part appears only when the row has it.
func TestEdgeLabel(t *testing.T) {
	type inv string
	for _, c := range []struct {
		guard    string
		internal bool
		carries  []inv
		want     string
	}{
		{want: "e"},
		{guard: "g", want: "e [g]"},
		{internal: true, want: "e (internal)"},
		{carries: []inv{"T1"}, want: "e · T1"},
		{guard: "g", internal: true, carries: []inv{"T1", "T3"}, want: "e [g] (internal) · T1,T3"},
	} {
		if got := statechart.EdgeLabel("e", c.guard, c.internal, c.carries); got != c.want {
			t.Errorf("EdgeLabel(e, %q, %v, %v) = %q, want %q", c.guard, c.internal, c.carries, got, c.want)
		}
	}
}
