package statechart

import (
	"fmt"
	"strings"
)

// Mermaid renders c as a Mermaid stateDiagram-v2: each state aliased to an
// id Mermaid accepts, the initial and final pseudo-transitions, and the
// labels escaped.
func Mermaid(c Chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%%%% %s\n", c.Header)
	b.WriteString("stateDiagram-v2\n")
	for _, s := range c.States {
		fmt.Fprintf(&b, "    state \"%s\" as %s\n", s.Name, mermaidID(s.Name))
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", mermaidID(c.Initial))
	for _, t := range c.Transitions {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", mermaidID(t.From), mermaidID(t.To), mermaidLabel(t.Label))
	}
	for _, s := range c.States {
		if s.Terminal {
			fmt.Fprintf(&b, "    %s --> [*]\n", mermaidID(s.Name))
		}
	}
	return b.String()
}

// mermaidID replaces the hyphen (as in backing-off), which Mermaid ids reject.
func mermaidID(name string) string { return strings.ReplaceAll(name, "-", "_") }

// mermaidLabel escapes what Mermaid transition labels cannot hold.
var mermaidLabel = strings.NewReplacer(":", "#58;", ";", "#59;").Replace
