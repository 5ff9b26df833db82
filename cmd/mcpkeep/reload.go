package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
)

// reload re-reads the config and applies it; a config that does not load
// leaves everything as it was.
func (sv *serving) reload(ctx context.Context, srv *proxy.Server) {
	cfg, warns, err := sv.load()
	sv.warn(warns)
	if err != nil {
		sv.logErrors("reload failed, config unchanged", err)
		return
	}
	if err := srv.Reload(ctx, cfg); err != nil {
		sv.logErrors("reload", err)
	}
}

func (sv *serving) warn(warns []config.Warning) {
	for _, w := range warns {
		sv.log.Warn("config", slog.String("path", w.Path), slog.String("warning", w.Message))
	}
}

// logErrors logs each error of a join on its own line.
func (sv *serving) logErrors(msg string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		sv.log.Error(msg, slog.String("err", line))
	}
}
