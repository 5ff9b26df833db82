// Command modelgen writes the Promela rendering of fsm.Table (models/fsm.pml)
// and runs SPIN on the hand-written model that includes it
// (docs/design.md §7, "The model").
//
//	modelgen -o models/fsm.pml               write the include (make modelgen)
//	modelgen -check models                   model-check it (make model)
//	modelgen -check models -drop-guard KEY   the same with a guard removed
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("modelgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the generated include to this file")
	check := fs.String("check", "", "model-check the model in this directory with SPIN")
	drop := fs.String("drop-guard", "", "remove this guard (a key of fsm.Guards) from its rows: a deliberate bug")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*out == "") == (*check == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "modelgen: give exactly one of -o FILE or -check DIR")
		return 2
	}
	src, err := generate(*drop)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *out != "" {
		if err := os.WriteFile(*out, src, 0o644); err != nil {
			fmt.Fprintln(stderr, "modelgen:", err)
			return 1
		}
		return 0
	}
	if err := checkModel(*check, src, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
