package main

import (
	"errors"
	"fmt"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/spf13/cobra"
)

// newRunCmd is `mcpkeep run [flags] -- COMMAND [ARGS...]` (or --url URL):
// one server, no config file, exposed under its own names, as a one-line
// change to any host's config. It is the proxy with a config built from
// the flags (checked by the config parser, so a bad value is reported as
// the flag that set it) and an initialize answer that mirrors the server:
// its serverInfo, capabilities and instructions, once its first connect
// settled (bounded by the smaller of the connect timeout and --init-wait).
func newRunCmd() *cobra.Command {
	var spec runSpec
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARGS...]",
		Short: "wrap one server (-- COMMAND, or --url) under its own names: a one-line host config change",
		Long: "Supervise one server, given as the command after -- or as --url URL, with no\n" +
			"config file, and serve it to the host under its own names. The flags set the\n" +
			"same policy keys as a config file. Durations take a unit (500ms, 2s, 1m) or are\n" +
			"milliseconds (500).",
		Example: `  As the one-line change to a host's config ("command" and "args"):
  "command": "mcpkeep", "args": ["run", "--", "npx", "-y", "@modelcontextprotocol/server-everything"]
  "command": "mcpkeep", "args": ["run", "--max-attempts", "20", "--", "uvx", "mcp-server-git"]
  "command": "mcpkeep", "args": ["run", "--url", "http://127.0.0.1:8080/mcp", "--header", "Authorization=Bearer ${TOKEN}"]`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, spec.command = args[:dash], args[dash:]
			}
			sv, err := sf.serving(cmd.ErrOrStderr())
			switch {
			case len(args) > 0:
				err = errors.Join(err, fmt.Errorf("unexpected argument %q (the server's command goes after --)", args[0]))
			case spec.url == "" && len(spec.command) == 0:
				err = errors.Join(err, errors.New("give a command after -- (or --url URL)"))
			case spec.url != "" && len(spec.command) > 0:
				err = errors.Join(err, fmt.Errorf("give either --url or a command, not both (command %q)", spec.command[0]))
			}
			if err != nil {
				return err
			}
			if spec.name == "" {
				spec.name = defaultName(spec.url, spec.command)
			}
			cfg, err := spec.config()
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep run: %v\n", err)
				return exitError{2}
			}
			// --wait-for-ready writes waitForReadyMs (0 fails fast);
			// without it, run holds calls as proxy does (10 s).
			cfg.ForServing()
			wait := sf.initWait.d
			if ct := cfg.Servers[0].ConnectTimeout; ct > 0 && ct < wait {
				wait = ct
			}
			sv.opts = proxy.Options{Mirror: spec.name, InitWait: wait, Pool: mcpkeep.PoolOptions{Namer: tools.OwnNames}}
			sv.load = func() (*config.Config, []config.Warning, error) { return cfg, nil, nil }
			return exit(sv.serve(cmd.OutOrStdout()))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false // the server, then its policy, then serving
	// Flags end at the first operand, as they did with the flag package:
	// `mcpkeep run npx -y pkg` (no --) is then "unexpected argument npx",
	// not an unknown flag -y.
	f.SetInterspersed(false)
	f.StringVar(&spec.url, "url", "", "a Streamable HTTP server's `URL`, instead of a command")
	f.BoolVar(&spec.oauth, "oauth", false, "with --url, sign in with OAuth (first: mcpkeep auth login --url URL)")
	f.StringVar(&spec.name, "name", "", "the server's `NAME` in logs (default: the command's or host's name)")
	f.StringVar(&spec.maxAttempts, "max-attempts", "", "`N` retries of one outage before giving up (config maxAttempts; default 10)")
	f.Var(&spec.initialDelay, "initial-delay", "delay before the first retry, e.g. 500ms (config initialDelayMs; default 500ms)")
	f.Var(&spec.maxDelay, "max-delay", "the longest delay between retries, e.g. 30s (config maxDelayMs; default 30s)")
	f.Var(&spec.connectTimeout, "connect-timeout", "bound of spawn + handshake + initial listing, e.g. 30s (config connectTimeoutMs)")
	f.Var(&spec.waitForReady, "wait-for-ready", "how long a request waits for the server during an outage, e.g. 5s; 0 fails fast (config waitForReadyMs; default 10s)")
	f.BoolVar(&spec.lazy, "lazy", false, "start the server at the first request that needs it, once its catalog is cached (config start: lazy)")
	f.Var(&spec.idleStop, "idle-stop", "stop the server after this long without requests, e.g. 10m (config idleStopMs; default 10m with --lazy, else off)")
	f.StringVar(&spec.eras, "eras", "", "with --listen, serve 2026-07-28 hosts from a `twin` process of the stdio server, or keep one `shared` process (config eras; default shared)")
	f.StringVar(&spec.tasks, "tasks", "", "the tasks extension for hosts that opt in: `auto` (a task for a call still running after --tasks-grace), always or never (config tasks.mode; default auto)")
	f.Var(&spec.tasksGrace, "tasks-grace", "with --tasks auto, how long a call runs before it becomes a task, e.g. 300ms (config tasks.graceMs; default 1s)")
	f.Var(&spec.tasksTools, "tasks-tool", "a tool's own tasks mode, `TOOL=MODE` with MODE auto, always, never or required (repeatable; config tasks.tools)")
	f.StringVar(&spec.cwd, "cwd", "", "the command's working directory `DIR`")
	f.Var(&spec.env, "env", "an environment variable of the command, `K=V` (repeatable; ${VAR} expands at each spawn)")
	f.Var(&spec.headers, "header", "an HTTP header of --url requests, `K=V` (repeatable)")
	_ = cmd.MarkFlagDirname("cwd")
	sf.register(cmd)
	return cmd
}
