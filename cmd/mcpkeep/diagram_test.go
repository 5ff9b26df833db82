package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

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
	code, out, errOut := runCLI("diagram", "-format=svg")
	if code != 0 || errOut != "" {
		t.Fatalf("svg: code %d, stderr %q", code, errOut)
	}
	checkSVG(t, []byte(out))
}

// checkSVG: a complete SVG document with a node for every state.
func checkSVG(t *testing.T, svg []byte) {
	t.Helper()
	s := string(svg)
	if !strings.HasPrefix(s, "<?xml") || !strings.Contains(s, "<svg") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Fatalf("not an SVG document: %.200q", s)
	}
	for _, st := range fsm.States {
		if !strings.Contains(s, "<title>"+strings.ReplaceAll(st.String(), "-", "&#45;")+"</title>") {
			t.Errorf("SVG has no node %q", st)
		}
	}
	if got := strings.Count(s, `class="edge"`); got != len(fsm.Table)+1 {
		t.Errorf("SVG has %d edges, want %d (rows + the initial arrow)", got, len(fsm.Table)+1)
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
	checkSVG(t, []byte(read("lifecycle.svg")))
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files written, want 3", len(entries))
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

func TestDiagramErrors(t *testing.T) {
	code, out, errOut := runCLI("diagram", "--format", "png")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown format "png"`) {
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

// TestSVGDeterministic: the wasm renderer gives identical bytes each time,
// which is what lets the drift test compare the committed SVG exactly.
func TestSVGDeterministic(t *testing.T) {
	a, err := renderSVG(fsm.DOT())
	if err != nil {
		t.Fatal(err)
	}
	b, err := renderSVG(fsm.DOT())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two renderings of the same DOT differ")
	}
}
