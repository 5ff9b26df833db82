package main

import (
	"errors"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/spf13/cobra"
)

// newProxyCmd is `mcpkeep proxy`: an MCP server on stdin/stdout (or HTTP)
// that serves the union of the configured servers, each supervised.
func newProxyCmd() *cobra.Command {
	var cfgPath string
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "proxy --config FILE [flags]",
		Short: "serve the configured servers over stdio (all of MCP), each server supervised",
		Long: "Serve the union of the configured servers' tools, prompts and resources to a host\n" +
			"over stdio, or to any number of hosts over Streamable HTTP with --listen; each\n" +
			"server is supervised. SIGHUP re-reads the config; stdin EOF, SIGINT or SIGTERM\n" +
			"stop every server and exit.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sv, err := sf.serving(cmd.ErrOrStderr())
			if cfgPath == "" {
				err = errors.Join(err, errors.New("--config FILE is required"))
			}
			if err != nil {
				return err
			}
			sv.load = func() (*config.Config, []config.Warning, error) { return loadServing(cfgPath) }
			return exit(sv.serve(cmd.OutOrStdout()))
		},
	}
	cmd.Flags().SortFlags = false
	cmd.Flags().StringVar(&cfgPath, "config", "", "the config `FILE`: mcpServers (Claude Desktop, Cursor) or servers (VS Code) shape (required)")
	_ = cmd.MarkFlagFilename("config")
	sf.register(cmd)
	return cmd
}

// loadServing loads the config as proxy serves it (and check shows it):
// with the serving defaults, such as waitForReadyMs 10 s where the file
// writes none (config.ForServing, docs/design.md §6).
func loadServing(path string) (*config.Config, []config.Warning, error) {
	cfg, warns, err := config.Load(path)
	if cfg != nil {
		cfg.ForServing()
	}
	return cfg, warns, err
}
