package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpkeep/mcpkeep/config"
)

// runProxy is `mcpkeep proxy`: an MCP server on stdin/stdout that serves
// the union of the configured servers' tools, each server supervised.
func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("proxy", "proxy --config FILE [--listen ADDR [--stdio] [--auth-token-env VAR]] [--log-format text|json] [--log-level LEVEL] [--trace FILE]")
	cfgPath := fs.String("config", "", "the config file: mcpServers (Claude Desktop, Cursor) or servers (VS Code) shape (required)")
	format := fs.String("log-format", "text", "log format on stderr: text | json (one object per line)")
	level := fs.String("log-level", "info", "debug | info | warn | error (debug adds the servers' stderr and the SDK's logs)")
	tracePath := fs.String("trace", "", "append every lifecycle transition to FILE as JSON lines")
	var listen listenOpts
	listen.register(fs)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	log, err := newLogger(stderr, *format, *level)
	if *cfgPath == "" {
		err = errors.Join(err, errors.New("--config FILE is required"))
	}
	err = errors.Join(err, listen.check())
	if err != nil {
		fmt.Fprintf(stderr, "mcpkeep proxy: %v\n", err)
		fs.Usage()
		return 2
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A host that dies leaves stdout a broken pipe. Unhandled, SIGPIPE on
	// fd 1 kills the process before it disposes its servers; noticed, the
	// write fails with EPIPE and the proxy shuts down in order.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	sv := &serving{tracePath: *tracePath, log: log, sdkLog: *level == "debug", listen: listen,
		load: func() (*config.Config, []config.Warning, error) { return config.Load(*cfgPath) }}
	return sv.run(os.Stdin, writeCloser(stdout), sigs)
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}
