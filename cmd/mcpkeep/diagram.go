package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goccy/go-graphviz"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// diagramFormats maps --format values to their file names, in the order
// `mcpkeep diagram` writes them.
var diagramFormats = []struct{ format, file string }{
	{"dot", "lifecycle.dot"},
	{"mermaid", "lifecycle.mmd"},
	{"svg", "lifecycle.svg"},
}

func runDiagram(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diagram", "diagram [--format dot|mermaid|svg] [-o DIR]\n\n"+
		"Renders the connection lifecycle declared in fsm.Table. Without --format it\n"+
		"writes lifecycle.dot, lifecycle.mmd and lifecycle.svg into DIR (default \".\").\n"+
		"With --format it writes that one rendering to stdout, or into DIR if -o is given.\n\nFlags:")
	format := fs.String("format", "", "render only this format: dot, mermaid or svg")
	dir := fs.String("o", "", "output directory")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}

	todo := diagramFormats
	if *format != "" {
		todo = nil
		for _, f := range diagramFormats {
			if f.format == *format {
				todo = append(todo, f)
			}
		}
		if todo == nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: unknown format %q (want dot, mermaid or svg)\n", *format)
			return 2
		}
	}
	toStdout := *format != "" && *dir == ""
	if *dir == "" {
		*dir = "."
	}
	if !toStdout {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: %v\n", err)
			return 1
		}
	}
	for _, f := range todo {
		b, err := render(f.format)
		if err == nil && toStdout {
			_, err = stdout.Write(b)
		} else if err == nil {
			err = os.WriteFile(filepath.Join(*dir, f.file), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: %s: %v\n", f.format, err)
			return 1
		}
	}
	return 0
}

// render returns the lifecycle in one format.
func render(format string) ([]byte, error) {
	switch format {
	case "dot":
		return []byte(fsm.DOT()), nil
	case "mermaid":
		return []byte(fsm.Mermaid()), nil
	case "svg":
		return renderSVG(fsm.DOT())
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// renderSVG lays out dot with Graphviz compiled to WebAssembly (go-graphviz
// runs it in wazero), so no system Graphviz is needed and the output is the
// same on every machine. It is only ever given fsm.DOT(): after one DOT
// syntax error, go-graphviz v0.2.10 fails every later parse in the process.
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
