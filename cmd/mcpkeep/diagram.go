package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

func newDiagramCmd() *cobra.Command {
	var format, dir string
	cmd := &cobra.Command{
		Use:   "diagram [flags]",
		Short: "render the connection lifecycle (DOT, Mermaid)",
		Long: "Render the connection lifecycle declared in fsm.Table. Without --format it\n" +
			"writes lifecycle.dot and lifecycle.mmd into DIR (default \".\"). With --format\n" +
			"it writes that one rendering to stdout, or into DIR if -o is given. The SVG\n" +
			"(diagrams/lifecycle.svg) is rendered at build time by `make diagram`.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(diagram(format, dir, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "", "render only this `FORMAT`: dot or mermaid")
	f.StringVarP(&dir, "output", "o", "", "output directory `DIR`")
	// --o, which the flag package accepted, still names -o.
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "o" {
			name = "output"
		}
		return pflag.NormalizedName(name)
	})
	completeWords(cmd, "format", "dot", "mermaid")
	_ = cmd.MarkFlagDirname("output")
	return cmd
}

func diagram(format, dir string, stdout, stderr io.Writer) int {
	if format == "svg" {
		fmt.Fprint(stderr, svgElsewhere)
		return 2
	}
	todo := diagramFormats
	if format != "" {
		todo = nil
		for _, f := range diagramFormats {
			if f.format == format {
				todo = append(todo, f)
			}
		}
		if todo == nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: unknown format %q (want dot or mermaid)\n", format)
			return 2
		}
	}
	toStdout := format != "" && dir == ""
	if dir == "" {
		dir = "."
	}
	if !toStdout {
		if err := os.MkdirAll(dir, 0o755); err != nil {
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
			err = os.WriteFile(filepath.Join(dir, f.file), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpkeep diagram: %s: %v\n", f.format, err)
			return 1
		}
	}
	return 0
}
