package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/spf13/cobra"
)

// newReplayCmd is `mcpkeep replay FILE...`: it checks each trace against the
// declared lifecycle (trace.Check) and prints one summary line per valid
// file on stdout. The first invalid file is reported as "FILE:LINE:
// reason" on stderr with exit status 1. FILE "-" is stdin.
func newReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "replay [flags] FILE...",
		Short: "check recorded event traces against the lifecycle",
		Long: "Check recorded event traces (mcpkeep proxy --trace, trace.Writer) against the\n" +
			"declared lifecycle and its invariants. Exit 0 with a summary line per valid\n" +
			"file; exit 1 with FILE:LINE: reason at the first problem. FILE - is stdin.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("no trace file given")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(replay(args, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
}

func replay(files []string, stdout, stderr io.Writer) int {
	for _, name := range files {
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
