package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

func TestDiagramToStdout(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{"dot", fsm.DOT()},
		{"mermaid", fsm.Mermaid()},
	} {
		code, out, errOut := runCLI("diagram", "--format", c.format)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: code %d, stderr %q", c.format, code, errOut)
		}
		if out != c.want {
			t.Errorf("--format %s printed something other than the declaration's rendering", c.format)
		}
	}
}

func TestDiagramAllFormatsToDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "out")
	code, out, errOut := runCLI("diagram", "-o", dir)
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("lifecycle.dot") != fsm.DOT() {
		t.Error("lifecycle.dot differs from fsm.DOT()")
	}
	if read("lifecycle.mmd") != fsm.Mermaid() {
		t.Error("lifecycle.mmd differs from fsm.Mermaid()")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files written, want 2 (no SVG: make diagram renders it)", len(entries))
	}
}

func TestDiagramOneFormatToDir(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI("diagram", "--format", "mermaid", "-o", dir)
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "lifecycle.mmd" {
		t.Errorf("wrote %v, want only lifecycle.mmd", entries)
	}
}

// TestDiagramSVGPointsToMakeDiagram: the binary links no layout engine, so
// --format svg is a usage error that names the build-time tool, and writes
// nothing, even with -o.
func TestDiagramSVGPointsToMakeDiagram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"diagram", "--format", "svg"},
		{"diagram", "--format=svg", "-o", dir},
	} {
		code, out, errOut := runCLI(args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "mcpkeep diagram: ") ||
			!strings.Contains(errOut, "make diagram") || !strings.Contains(errOut, "go run ./internal/cmd/diagrams") {
			t.Errorf("%q: code %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--format svg -o DIR created DIR (%v)", err)
	}
}

func TestDiagramErrors(t *testing.T) {
	code, out, errOut := runCLI("diagram", "--format", "png")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown format "png" (want dot or mermaid)`) {
		t.Errorf("--format png: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	// -o naming a regular file cannot become a directory.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI("diagram", "-o", file)
	if code != 1 || !strings.HasPrefix(errOut, "mcpkeep diagram: ") {
		t.Errorf("-o FILE: code %d, stderr %q", code, errOut)
	}
}
