package fsm_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// The tests below check what DOT and Mermaid say about Table, not their bytes:
// the committed renderings in diagrams/ (and the README's mermaid block) are
// compared byte for byte in one place, internal/cmd/diagrams (run make diagram).

var (
	dotNode = regexp.MustCompile(`(?m)^\t"([a-z-]+)"( \[[^]]*\])?;$`)
	dotEdge = regexp.MustCompile(`(?m)^\t"([a-z-]+)" -> "([a-z-]+)" \[label="([^"]*)"(, style=dashed)?\];$`)
)

// TestDOTShape: the DOT declares all 7 states and exactly one edge per
// Table row, each with that row's endpoints and label.
func TestDOTShape(t *testing.T) {
	dot := fsm.DOT()
	nodes := map[string]bool{}
	for _, m := range dotNode.FindAllStringSubmatch(dot, -1) {
		nodes[m[1]] = true
	}
	for _, s := range fsm.States {
		if !nodes[s.String()] {
			t.Errorf("DOT declares no node %q", s)
		}
	}
	if len(nodes) != len(fsm.States) {
		t.Errorf("DOT declares %d state nodes, want %d", len(nodes), len(fsm.States))
	}
	if !strings.Contains(dot, `__start -> "connecting";`) {
		t.Error("DOT has no initial arrow into connecting")
	}
	if !strings.Contains(dot, `"disposed" [shape=doublecircle`) {
		t.Error("DOT does not mark disposed as terminal")
	}
	edges := dotEdge.FindAllStringSubmatch(dot, -1)
	if len(edges) != len(fsm.Table) {
		t.Fatalf("DOT has %d edges, Table has %d rows", len(edges), len(fsm.Table))
	}
	for i, row := range fsm.Table {
		e := edges[i]
		if e[1] != row.From.String() || e[2] != row.To.String() {
			t.Errorf("edge %d is %s -> %s, row is %s -> %s", i, e[1], e[2], row.From, row.To)
		}
		if !strings.HasPrefix(e[3], row.Event.String()) || !strings.Contains(e[3], row.Guard.Name) {
			t.Errorf("edge %d label %q does not name event %s and guard %q", i, e[3], row.Event, row.Guard.Name)
		}
		if (e[4] != "") != row.Internal {
			t.Errorf("edge %d dashed=%v, row internal=%v", i, e[4] != "", row.Internal)
		}
		for _, inv := range row.Carries {
			if !strings.Contains(e[3], string(inv)) {
				t.Errorf("edge %d label %q omits carried invariant %s", i, e[3], inv)
			}
		}
	}
}

// TestMermaidShape: one transition line per row plus the initial and final
// pseudo-transitions, and ids Mermaid accepts.
func TestMermaidShape(t *testing.T) {
	mmd := fsm.Mermaid()
	lines := strings.Split(strings.TrimSuffix(mmd, "\n"), "\n")
	if lines[1] != "stateDiagram-v2" {
		t.Errorf("second line %q, want stateDiagram-v2", lines[1])
	}
	arrows := 0
	for _, l := range lines {
		if strings.Contains(l, " --> ") {
			arrows++
		}
	}
	if want := len(fsm.Table) + 2; arrows != want {
		t.Errorf("%d transitions, want %d (rows + [*] in and out)", arrows, want)
	}
	if !strings.Contains(mmd, "    [*] --> connecting\n") || !strings.Contains(mmd, "    disposed --> [*]\n") {
		t.Error("Mermaid lacks the initial or final pseudo-state")
	}
	if !strings.Contains(mmd, `state "backing-off" as backing_off`) {
		t.Error("Mermaid does not alias backing-off to a valid id")
	}
	if strings.Count(mmd, ":") != len(fsm.Table) {
		t.Error("a label contains an unescaped colon")
	}
}
