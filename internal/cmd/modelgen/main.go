// Command modelgen writes the Promela renderings of the declared tables
// (models/fsm.pml from fsm.Table, models/tasks_table.pml from
// tasks.Table) and runs SPIN on the hand-written models that include them
// (docs/design.md §7, "The model").
//
//	modelgen -o models/fsm.pml                     write the lifecycle's include
//	modelgen -model task -o models/tasks_table.pml write the task's include
//	modelgen -check models                         model-check both (make model)
//	modelgen -check models -model task             model-check one
//	modelgen -check models -drop-guard KEY         the model of KEY's table with that guard removed
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// ErrUnknownModel: -model names no model.
var ErrUnknownModel = errors.New("no such model (lifecycle, task)")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("modelgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the generated include to this file")
	check := fs.String("check", "", "model-check the models in this directory with SPIN")
	model := fs.String("model", "", "lifecycle or task (-o: default lifecycle; -check: default both)")
	drop := fs.String("drop-guard", "", "remove this guard (a key of fsm.Guards or tasks.Guards) from its rows: a deliberate bug")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*out == "") == (*check == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "modelgen: give exactly one of -o FILE or -check DIR")
		return 2
	}
	ms, err := pick(*model, *drop, *out != "")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, m := range ms {
		src, err := emit(m, *drop)
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
		if err := checkModel(*check, m, src, stdout); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	return 0
}

// pick is the models a run is about: the one -model names; else the one
// whose table declares the dropped guard; else lifecycle for -o and all
// for -check.
func pick(name, drop string, one bool) ([]machine, error) {
	all := machines()
	if name != "" {
		for _, m := range all {
			if m.name == name {
				return []machine{m}, nil
			}
		}
		return nil, fmt.Errorf("modelgen: -model %q: %w", name, ErrUnknownModel)
	}
	if drop != "" {
		for _, m := range all {
			if m.knownGuard(drop) {
				return []machine{m}, nil
			}
		}
		return nil, fmt.Errorf("modelgen: -drop-guard %q: %w (fsm.Guards, tasks.Guards)", drop, ErrUnknownGuard)
	}
	if one {
		return all[:1], nil
	}
	return all, nil
}
