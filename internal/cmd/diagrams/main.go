// Command diagrams regenerates every committed rendering of the declared
// lifecycle (fsm.Table): lifecycle.dot, lifecycle.mmd and lifecycle.svg in a
// directory, and of the task table (tasks.Table): tasks.dot, tasks.mmd and
// tasks.svg beside them, with -readme the mermaid block of README.md, and with -page
// the live page's copy of the SVG (docs/design.md §28: proxy embeds it).
// `make diagram` runs it from the repository root:
//
//	go run ./internal/cmd/diagrams -o diagrams -readme README.md -page proxy/ui/lifecycle.svg
//
// It is a build-time tool and the only package that links the SVG renderer
// (github.com/goccy/go-graphviz, Graphviz compiled to WebAssembly and run in
// wazero, so no system Graphviz is needed): the shipped mcpkeep binary
// renders DOT and Mermaid only. drift_test.go, which make test runs, fails
// when diagrams/ or the README block no longer match what this writes.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run parses args, writes the renderings and returns the exit code: 0
// success, 1 failure, 2 misuse.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("diagrams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: go run ./internal/cmd/diagrams [-o DIR] [-readme FILE] [-page FILE]\n\n"+
			"Writes lifecycle.{dot,mmd,svg}, rendered from fsm.Table, and tasks.{dot,mmd,svg},\n"+
			"rendered from tasks.Table, into DIR; with -readme, also rewrites FILE's mermaid block (the file must\n"+
			"hold exactly one); with -page, also writes the SVG to FILE. `make diagram`\n"+
			"passes -o diagrams -readme README.md -page proxy/ui/lifecycle.svg.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	dir := fs.String("o", "diagrams", "output directory")
	readme := fs.String("readme", "", "also rewrite this Markdown file's mermaid block")
	page := fs.String("page", "", "also write the SVG to this file (the live page's embedded copy)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "diagrams: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if err := write(*dir, *readme, *page); err != nil {
		fmt.Fprintf(stderr, "diagrams: %v\n", err)
		return 1
	}
	return 0
}

// pageSVG is the rendering the live page embeds a copy of (-page).
const pageSVG = "lifecycle.svg"

// A rendering is one committed file: its name in diagrams/ and its content.
type rendering struct {
	name string
	data []byte
}

// renderings returns the lifecycle and the task table (tasks.Table,
// docs/design.md §25) in every committed form, in the order they are
// written.
func renderings() ([]rendering, error) {
	var out []rendering
	for _, d := range []struct{ name, dot, mmd string }{
		{"lifecycle", fsm.DOT(), fsm.Mermaid()},
		{"tasks", tasks.DOT(), tasks.Mermaid()},
	} {
		svg, err := renderSVG(d.dot)
		if err != nil {
			return nil, fmt.Errorf("%s.svg: %w", d.name, err)
		}
		out = append(out,
			rendering{d.name + ".dot", []byte(d.dot)},
			rendering{d.name + ".mmd", []byte(d.mmd)},
			rendering{d.name + ".svg", svg})
	}
	return out, nil
}

// write renders into dir (created if missing), unless page is empty
// writes the SVG there too, and, unless readme is empty, replaces that
// file's mermaid block with fsm.Mermaid(). Files whose content is already
// right are left untouched.
func write(dir, readme, page string) error {
	rs, err := renderings()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, r := range rs {
		if err := writeIfChanged(filepath.Join(dir, r.name), r.data); err != nil {
			return err
		}
		if r.name == pageSVG && page != "" {
			if err := writeIfChanged(page, r.data); err != nil {
				return err
			}
		}
	}
	if readme == "" {
		return nil
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	nb, err := withMermaid(b, fsm.Mermaid())
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return writeIfChanged(readme, nb)
}

// writeIfChanged writes data to path unless it already holds exactly that,
// keeping an existing file's permissions.
func writeIfChanged(path string, data []byte) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return nil
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return os.WriteFile(path, data, mode)
}

const mermaidOpen, mermaidClose = "```mermaid\n", "```\n"

// mermaidBlock returns the content of md's only mermaid block, between its
// fences, and the byte offsets where that content starts and ends.
func mermaidBlock(md []byte) (block string, start, end int, err error) {
	s := string(md)
	if n := strings.Count(s, mermaidOpen); n != 1 {
		return "", 0, 0, fmt.Errorf("%d mermaid blocks, want 1", n)
	}
	start = strings.Index(s, mermaidOpen) + len(mermaidOpen)
	// From the opening fence's newline, so that an empty block closes too.
	n := strings.Index(s[start-1:], "\n"+mermaidClose)
	if n < 0 {
		return "", 0, 0, errors.New("the mermaid block is not closed by a line of ```")
	}
	end = start + n
	return s[start:end], start, end, nil
}

// withMermaid returns md with its only mermaid block's content replaced by
// mmd (which ends in a newline).
func withMermaid(md []byte, mmd string) ([]byte, error) {
	_, start, end, err := mermaidBlock(md)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(md)-(end-start)+len(mmd))
	out = append(out, md[:start]...)
	out = append(out, mmd...)
	return append(out, md[end:]...), nil
}

// renderSVG lays out dot with Graphviz compiled to WebAssembly, so the
// output is the same on every machine (TestSVGDeterministic checks it
// within a process, the drift test against the committed file). It is
// only ever given fsm.DOT() and tasks.DOT(): after one DOT syntax error, go-graphviz
// v0.2.10 fails every later parse in the process.
func renderSVG(dot string) (_ []byte, err error) {
	ctx := context.Background()
	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := gv.Close(); err == nil {
			err = cerr
		}
	}()
	graph, err := graphviz.ParseBytes([]byte(dot))
	if err != nil {
		return nil, fmt.Errorf("parse DOT: %w", err)
	}
	defer graph.Close()
	var buf bytes.Buffer
	if err := gv.Render(ctx, graph, graphviz.SVG, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
