package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/proxy"

	"github.com/spf13/cobra"
)

// serveFlags are the flags proxy and run share: logging, the trace, and
// serving hosts over HTTP.
type serveFlags struct {
	format, level, trace string
	listen               listenOpts
	initWait             durationFlag
	cacheDir             string
	noCache              bool
	replicas             replicaOpts // replicaflags.go
}

func (s *serveFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.format, "log-format", "text", "log `FORMAT` on stderr: text | json (one object per line)")
	f.StringVar(&s.level, "log-level", "info", "`LEVEL`: debug | info | warn | error (debug adds the servers' stderr and the SDK's logs)")
	f.StringVar(&s.trace, "trace", "", "append every lifecycle transition to `FILE` as JSON lines")
	s.initWait = durationFlag{d: proxy.DefaultInitWait}
	f.Var(&s.initWait, "init-wait", "the longest the host's initialize waits for the servers' first connects, counted from mcpkeep's start (a cached server does not hold it)")
	f.StringVar(&s.cacheDir, "cache-dir", "", "the catalog cache `DIR` (default: the user cache directory's mcpkeep)")
	f.BoolVar(&s.noCache, "no-cache", false, "keep no catalog cache: every start waits for the servers' first connects")
	s.listen.register(f)
	s.replicas.register(f)
	completeWords(cmd, "log-format", "text", "json")
	completeWords(cmd, "log-level", "debug", "info", "warn", "error")
	_ = cmd.MarkFlagFilename("trace")
	_ = cmd.MarkFlagDirname("cache-dir")
}

// serving is the serving of these flags: the caller adds load and opts.
// Invalid log flags or listen combinations are errors naming the flags.
func (s *serveFlags) serving(stderr io.Writer) (*serving, error) {
	log, err := newLogger(stderr, s.format, s.level)
	if s.noCache && s.cacheDir != "" {
		err = errors.Join(err, errors.New("--no-cache and --cache-dir: give one"))
	}
	if err = errors.Join(err, s.listen.check(), s.replicas.check(s.listen.addr)); err != nil {
		return nil, err
	}
	sv := &serving{tracePath: s.trace, log: log, sdkLog: s.level == "debug", listen: s.listen, initWait: s.initWait.d,
		replicas: s.replicas}
	if !s.noCache {
		dir := s.cacheDir
		if dir == "" {
			if dir, err = catalogcache.DefaultDir(); err != nil {
				// No cache directory is no reason not to serve.
				log.Warn("no catalog cache", slog.Any("err", err))
			}
		}
		if dir != "" {
			sv.cache, sv.cacheDir = catalogcache.New(dir), dir
		}
	}
	return sv, nil
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
