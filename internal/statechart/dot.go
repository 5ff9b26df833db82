package statechart

import (
	"fmt"
	"strings"
)

// DOT renders c as Graphviz DOT: each state outlined in its colour with a
// light tint inside, the terminal ones doubly circled, an arrow from the
// initial point, labels on the edges and internal rows dashed.
func DOT(c Chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\n", c.Header)
	fmt.Fprintf(&b, "digraph %s {\n", c.Name)
	b.WriteString("\trankdir=LR;\n")
	b.WriteString("\tpad=0.3;\n")
	b.WriteString("\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\", fontsize=10];\n")
	b.WriteString("\t__start [shape=point, width=0.15, label=\"\"];\n")
	for _, s := range c.States {
		if s.Terminal {
			fmt.Fprintf(&b, "\t%q [shape=doublecircle, style=filled, color=%q, fillcolor=%q, penwidth=1.5];\n", s.Name, s.Color, s.Color+"22")
		} else {
			fmt.Fprintf(&b, "\t%q [style=\"rounded,filled\", color=%q, fillcolor=%q, penwidth=1.5];\n", s.Name, s.Color, s.Color+"22")
		}
	}
	fmt.Fprintf(&b, "\t__start -> %q;\n", c.Initial)
	for _, t := range c.Transitions {
		style := ""
		if t.Internal {
			style = ", style=dashed"
		}
		fmt.Fprintf(&b, "\t%q -> %q [label=%q%s];\n", t.From, t.To, t.Label, style)
	}
	b.WriteString("}\n")
	return b.String()
}
