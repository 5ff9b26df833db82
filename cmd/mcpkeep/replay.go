package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpkeep/mcpkeep/trace"
)

// runReplay is `mcpkeep replay FILE...`: it checks each trace against the
// declared lifecycle (trace.Check) and prints one summary line per valid
// file on stdout. The first invalid file is reported as "FILE:LINE:
// reason" on stderr with exit status 1. FILE "-" is stdin.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay", "replay FILE...\n\n"+
		"Check recorded event traces (mcpkeep proxy --trace, trace.Writer) against the\n"+
		"declared lifecycle and its invariants. Exit 0 with a summary line per valid\n"+
		"file; exit 1 with FILE:LINE: reason at the first problem. FILE - is stdin.\n")
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		io.Copy(stdout, &out)
		return 0
	case err != nil:
		io.Copy(stderr, &out)
		return 2
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "mcpkeep replay: no trace file given")
		fs.Usage()
		return 2
	}
	for _, name := range fs.Args() {
		s, err := replayFile(name)
		if err != nil {
			var le *trace.LineError
			if errors.As(err, &le) {
				fmt.Fprintf(stderr, "%s:%d: %v\n", name, le.Line, le.Err)
			} else {
				fmt.Fprintf(stderr, "%s: %v\n", name, err)
			}
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", name, s)
	}
	return 0
}

func replayFile(name string) (trace.Summary, error) {
	if name == "-" {
		return trace.Summarize(os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return trace.Summary{}, err
	}
	defer f.Close()
	return trace.Summarize(f)
}
