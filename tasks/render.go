package tasks

import (
	"fmt"
	"strings"
)

// DOT renders the task table (docs/design.md §25) as Graphviz DOT: guards on edge labels,
// internal transitions as self-loops, the terminal state doubly circled and
// an arrow from the initial point. The output depends only on Table, so it
// is byte-for-byte deterministic.
func DOT() string {
	var b strings.Builder
	b.WriteString("// Code generated from tasks.Table by `make diagram`; DO NOT EDIT.\n")
	b.WriteString("digraph tasks {\n")
	b.WriteString("\trankdir=LR;\n")
	b.WriteString("\tpad=0.3;\n")
	b.WriteString("\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\", fontsize=10];\n")
	b.WriteString("\t__start [shape=point, width=0.15, label=\"\"];\n")
	for _, s := range States {
		// Each state in its colour (State.Color), a light tint inside.
		c := s.Color()
		if s.Terminal() {
			fmt.Fprintf(&b, "\t%q [shape=doublecircle, style=filled, color=%q, fillcolor=%q, penwidth=1.5];\n", s.String(), c, c+"22")
		} else {
			fmt.Fprintf(&b, "\t%q [style=\"rounded,filled\", color=%q, fillcolor=%q, penwidth=1.5];\n", s.String(), c, c+"22")
		}
	}
	fmt.Fprintf(&b, "\t__start -> %q;\n", Initial.String())
	for _, t := range Table {
		label := edgeLabel(t)
		style := ""
		if t.Internal {
			style = ", style=dashed"
		}
		fmt.Fprintf(&b, "\t%q -> %q [label=%q%s];\n", t.From.String(), t.To.String(), label, style)
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the declaration as a Mermaid stateDiagram-v2.
func Mermaid() string {
	var b strings.Builder
	b.WriteString("%% Code generated from tasks.Table by `make diagram`; DO NOT EDIT.\n")
	b.WriteString("stateDiagram-v2\n")
	for _, s := range States {
		fmt.Fprintf(&b, "    state \"%s\" as %s\n", s.String(), mermaidID(s))
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", mermaidID(Initial))
	for _, t := range Table {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", mermaidID(t.From), mermaidID(t.To), mermaidLabel(edgeLabel(t)))
	}
	for _, s := range States {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", mermaidID(s))
		}
	}
	return b.String()
}

// edgeLabel is "event [guard]" plus the invariants the row carries.
func edgeLabel(t Transition) string {
	l := t.Event.String()
	if t.Guard.Name != "" {
		l += " [" + t.Guard.Name + "]"
	}
	if t.Internal {
		l += " (internal)"
	}
	if len(t.Carries) > 0 {
		ids := make([]string, len(t.Carries))
		for i, c := range t.Carries {
			ids[i] = string(c)
		}
		l += " · " + strings.Join(ids, ",")
	}
	return l
}

// mermaidID keeps Mermaid ids plain.
func mermaidID(s State) string { return strings.ReplaceAll(s.String(), "-", "_") }

// mermaidLabel escapes what Mermaid transition labels cannot hold.
func mermaidLabel(s string) string {
	r := strings.NewReplacer(":", "#58;", ";", "#59;")
	return r.Replace(s)
}
