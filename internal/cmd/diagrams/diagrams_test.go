package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

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
		t.Errorf("two renderings of the same DOT differ:\n%s", firstDiff(string(a), string(b)))
	}
}

// TestSVGShape: a complete SVG document with a node for every state and an
// edge for every Table row plus the initial arrow.
func TestSVGShape(t *testing.T) {
	svg, err := renderSVG(fsm.DOT())
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg)
}

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

// checkTasksSVG: a node for every task state and an edge for every
// tasks.Table row plus the initial arrow (docs/design.md §25).
func checkTasksSVG(t *testing.T, svg []byte) {
	t.Helper()
	s := string(svg)
	if !strings.HasPrefix(s, "<?xml") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Fatalf("not an SVG document: %.200q", s)
	}
	for _, st := range tasks.States {
		if !strings.Contains(s, "<title>"+st.String()+"</title>") {
			t.Errorf("tasks SVG has no node %q", st)
		}
	}
	if got := strings.Count(s, `class="edge"`); got != len(tasks.Table)+1 {
		t.Errorf("tasks SVG has %d edges, want %d", got, len(tasks.Table)+1)
	}
}

// TestRunWritesEveryRendering: -o DIR (created) gets the three files,
// -readme FILE gets its mermaid block replaced and keeps the rest.
func TestRunWritesEveryRendering(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "nested", "out")
	readme := filepath.Join(tmp, "README.md")
	before := "# t\n\nintro\n\n```mermaid\nstale\n```\n\nafter\n"
	if err := os.WriteFile(readme, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-o", dir, "-readme", readme}, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read(filepath.Join(dir, "lifecycle.dot")) != fsm.DOT() {
		t.Error("lifecycle.dot differs from fsm.DOT()")
	}
	if read(filepath.Join(dir, "lifecycle.mmd")) != fsm.Mermaid() {
		t.Error("lifecycle.mmd differs from fsm.Mermaid()")
	}
	checkSVG(t, []byte(read(filepath.Join(dir, "lifecycle.svg"))))
	if read(filepath.Join(dir, "tasks.dot")) != tasks.DOT() {
		t.Error("tasks.dot differs from tasks.DOT()")
	}
	if read(filepath.Join(dir, "tasks.mmd")) != tasks.Mermaid() {
		t.Error("tasks.mmd differs from tasks.Mermaid()")
	}
	checkTasksSVG(t, []byte(read(filepath.Join(dir, "tasks.svg"))))
	if entries, _ := os.ReadDir(dir); len(entries) != 6 {
		t.Errorf("%d files written, want 6", len(entries))
	}
	want := "# t\n\nintro\n\n```mermaid\n" + fsm.Mermaid() + "```\n\nafter\n"
	if got := read(readme); got != want {
		t.Errorf("README after run:\n%s\nwant:\n%s", got, want)
	}
	if fi, err := os.Stat(readme); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("README mode %v (%v), want 0600 kept", fi.Mode().Perm(), err)
	}
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-format", "svg"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-o", t.TempDir(), "-readme", filepath.Join(t.TempDir(), "missing.md")}, 1, "diagrams: "},
	} {
		var stderr bytes.Buffer
		if code := run(c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%q: code %d, stderr %q; want %d and %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
	// -o naming a regular file cannot become a directory.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-o", file}, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "diagrams: ") {
		t.Errorf("-o FILE: code %d, stderr %q", code, stderr.String())
	}
}

func TestWithMermaid(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"a\n```mermaid\nold\nlines\n```\nb\n", "a\n```mermaid\nNEW\n```\nb\n", ""},
		{"```mermaid\n```\n", "```mermaid\nNEW\n```\n", ""},        // empty block
		{"```mermaid\nx ```\n```\n", "```mermaid\nNEW\n```\n", ""}, // a fence only at a line start closes it
		{"no block\n", "", "0 mermaid blocks, want 1"},
		{"```mermaid\na\n```\n```mermaid\nb\n```\n", "", "2 mermaid blocks, want 1"},
		{"```mermaid\nunclosed\n", "", "not closed"},
	} {
		got, err := withMermaid([]byte(c.in), "NEW\n")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
