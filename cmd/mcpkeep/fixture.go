package main

import (
	"fmt"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/spf13/cobra"
)

// newFixtureCmd is `mcpkeep fixture`: the built-in MCP stdio test server, with
// every MCP feature and fault modes, which `mcpkeep demo` and the end-to-end
// tests run as a supervised child. It speaks on the process's own stdin and
// stdout. --help lists its tools, prompts, resources and modes
// (fixture.Usage).
func newFixtureCmd() *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "fixture [flags]",
		Short: "the built-in MCP test server with fault modes",
		Long: "The built-in MCP test server, on stdin and stdout, with every MCP feature the\n" +
			"tests relay and fault modes.\n\n" + fixture.Usage,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := fixture.ParseMode(mode); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep fixture: %v\n", err)
				return exitError{2}
			}
			return exit(fixture.Main([]string{"--mode", mode}))
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "normal", "`MODE`: normal | hang-init | exit-after=D | garbage | ignore-term | grandchild")
	completeWords(cmd, "mode", "normal", "hang-init", "exit-after=", "garbage", "ignore-term", "grandchild")
	return cmd
}
