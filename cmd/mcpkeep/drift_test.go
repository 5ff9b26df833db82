package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// TestCommittedDiagramsMatchDeclaration fails when diagrams/ was not
// regenerated after a change to fsm.Table: run `make diagram`.
func TestCommittedDiagramsMatchDeclaration(t *testing.T) {
	for _, f := range diagramFormats {
		want, err := render(f.format)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "diagrams", f.file))
		if err != nil {
			t.Fatalf("%v (run make diagram)", err)
		}
		if len(got) == 0 {
			t.Errorf("diagrams/%s is empty", f.file)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("diagrams/%s is stale: run make diagram", f.file)
		}
	}
}

// TestREADMEMermaid fails when the README's lifecycle diagram drifts from
// the declaration: paste diagrams/lifecycle.mmd into its mermaid block.
func TestREADMEMermaid(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const open, fence = "```mermaid\n", "```\n"
	if strings.Count(readme, open) != 1 {
		t.Fatalf("README has %d mermaid blocks, want 1", strings.Count(readme, open))
	}
	_, rest, _ := strings.Cut(readme, open)
	block, _, ok := strings.Cut(rest, fence)
	if !ok {
		t.Fatal("README's mermaid block is not closed")
	}
	if block != fsm.Mermaid() {
		t.Errorf("README's mermaid block differs from diagrams/lifecycle.mmd; paste it in again")
	}
	if !strings.Contains(readme, "(diagrams/lifecycle.svg)") {
		t.Error("README does not link diagrams/lifecycle.svg")
	}
}
