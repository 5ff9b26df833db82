package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

var update = flag.Bool("update", false, "rewrite diagrams/ and README.md's mermaid block from fsm.Table (what make diagram does)")

// root is the repository root, seen from this package's directory.
const root = "../../.."

// TestCommittedRenderingsMatchDeclaration is the project's one drift check:
// diagrams/ must hold exactly what this command renders from fsm.Table
// and tasks.Table (DOT, Mermaid and SVG, compared byte for byte), the live page's embedded
// chart (proxy/ui/lifecycle.svg) that same SVG, and README.md's mermaid
// block that same Mermaid. After an intended change to the table:
// make diagram (or go test ./internal/cmd/diagrams -update).
func TestCommittedRenderingsMatchDeclaration(t *testing.T) {
	dir, readme := filepath.Join(root, "diagrams"), filepath.Join(root, "README.md")
	page := filepath.Join(root, "proxy", "ui", "lifecycle.svg")
	if *update {
		if err := write(dir, readme, page); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := renderings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
		got, err := os.ReadFile(filepath.Join(dir, r.name))
		if err != nil {
			t.Errorf("%v: run make diagram", err)
			continue
		}
		if !bytes.Equal(got, r.data) {
			t.Errorf("diagrams/%s is stale: run make diagram\n%s", r.name, firstDiff(string(got), string(r.data)))
		}
		if r.name == pageSVG {
			// The live page's embedded copy (docs/design.md §28).
			if got, err := os.ReadFile(page); err != nil {
				t.Errorf("%v: run make diagram", err)
			} else if !bytes.Equal(got, r.data) {
				t.Errorf("proxy/ui/lifecycle.svg (the live page's chart) is stale: run make diagram\n%s",
					firstDiff(string(got), string(r.data)))
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("diagrams/%s is not a rendering of fsm.Table: remove it, then run make diagram", e.Name())
		}
	}

	md, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	block, _, _, err := mermaidBlock(md)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if block != fsm.Mermaid() {
		t.Errorf("README.md's mermaid block differs from fsm.Table's Mermaid rendering: run make diagram\n%s",
			firstDiff(block, fsm.Mermaid()))
	}
	if !bytes.Contains(md, []byte("(diagrams/lifecycle.svg)")) {
		t.Error("README.md does not link diagrams/lifecycle.svg")
	}
}

// firstDiff shows the first line where the committed text and the fresh
// rendering differ.
func firstDiff(committed, rendered string) string {
	c, r := strings.Split(committed, "\n"), strings.Split(rendered, "\n")
	for i := 0; i < len(c) || i < len(r); i++ {
		var cl, rl string
		if i < len(c) {
			cl = c[i]
		}
		if i < len(r) {
			rl = r[i]
		}
		if cl != rl {
			return "line " + strconv.Itoa(i+1) + ":\n  committed " + cl + "\n  rendered  " + rl
		}
	}
	return "(no line differs)"
}
