package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// diagramFormats maps --format values to their renderings and file names,
// in the order `mcpkeep diagram` writes them.
var diagramFormats = []struct {
	format, file string
	render       func() string
}{
	{"dot", "lifecycle.dot", fsm.DOT},
	{"mermaid", "lifecycle.mmd", fsm.Mermaid},
}

// svgElsewhere is the answer to --format svg: the binary links no layout
// engine (docs/design.md §1); the SVG is rendered at build time.
const svgElsewhere = "mcpkeep diagram: this binary renders no SVG; in a checkout of the " +
	"repository, `make diagram` writes diagrams/lifecycle.svg " +
	"(or `go run ./internal/cmd/diagrams -o DIR`)\n"

func runDiagram(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diagram", "diagram [--format dot|mermaid] [-o DIR]\n\n"+
		"Renders the connection lifecycle declared in fsm.Table. Without --format it\n"+
		"writes lifecycle.dot and lifecycle.mmd into DIR (default \".\"). With --format\n"+
		"it writes that one rendering to stdout, or into DIR if -o is given. The SVG\n"+
		"(diagrams/lifecycle.svg) is rendered at build time by `make diagram`.\n\nFlags:")
	format := fs.String("format", "", "render only this format: dot or mermaid")
	dir := fs.String("o", "", "output directory")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}

	if *format == "svg" {
		fmt.Fprint(stderr, svgElsewhere)
		return 2
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
			fmt.Fprintf(stderr, "mcpkeep diagram: unknown format %q (want dot or mermaid)\n", *format)
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
		var err error
		b := []byte(f.render())
		if toStdout {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(filepath.Join(*dir, f.file), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: %s: %v\n", f.format, err)
			return 1
		}
	}
	return 0
}
