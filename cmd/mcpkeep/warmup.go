package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/transport"
)

// warmUp readies, once the start settled, what a lazy server's first
// start on demand would otherwise set up while the host waits (docs/
// design.md §20): the runtime's one-time check that pidfds work (a
// pidfd_open, a waitid and a clone of a throwaway child, run on the first
// process start or lookup), and one supervised connection, call, raw call
// (the relay's path) and disposal over an in-memory server, which builds
// the JSON codecs of the handshake and a call and runs the SDK's client
// path and the supervisor's loop once. Beside it the idle first call's
// spawn and handshake took about 0.6 ms less (make bench, the idle first
// call by phase: four runs each way, ratios 1.09-1.12 against 1.16-1.23).
// Without a lazy server it does only the fast path's part (ran false): an
// eager server's own start does the rest. ctx ends it early.
func warmUp(ctx context.Context, cfg *config.Config) (ran bool, err error) {
	// Every proxy's first relayed call parses with these (proxy.Warm).
	if err := proxy.Warm(); err != nil {
		return false, err
	}
	if !anyLazy(cfg) {
		return false, nil
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Release()
	}
	s, err := mcpkeep.New(mcpkeep.Options{Name: "warm-up", Opener: transport.NewMemory("echo")})
	if err != nil {
		return true, err
	}
	if err = s.Start(ctx); err == nil {
		_, err = s.Call(ctx, "echo", map[string]any{"text": "x"}, nil)
		if err == nil {
			_, err = s.CallRaw(ctx, "echo", json.RawMessage(`{"text":"x"}`), nil)
		}
	}
	return true, errors.Join(err, s.Dispose(context.WithoutCancel(ctx)))
}

// anyLazy reports whether cfg starts a server on demand.
func anyLazy(cfg *config.Config) bool {
	if cfg == nil {
		return false
	}
	for _, sc := range cfg.Servers {
		if sc.Lazy {
			return true
		}
	}
	return false
}
