package main

import (
	"context"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// demoOpener is transport.Stdio with the fixture's mode chosen per
// generation: the demo's script.
type demoOpener struct {
	d      *demo
	uptime time.Duration

	mu   sync.Mutex
	gens map[uint64]transport.Generation // for their exit status
}

func (o *demoOpener) stdio(gen uint64) *transport.Stdio {
	path, args, env := o.d.fixture(o.d.modeFor(gen, o.uptime))
	return &transport.Stdio{Command: path, Args: args, Env: env, Server: "demo"}
}

func (o *demoOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	g, err := o.stdio(gen).Open(ctx, gen)
	if err == nil {
		o.mu.Lock()
		o.gens[gen] = g
		o.mu.Unlock()
	}
	return g, err
}

// exit is how generation gen's process ended, as far as known.
func (o *demoOpener) exit(gen uint64) string {
	o.mu.Lock()
	g := o.gens[gen]
	o.mu.Unlock()
	if g == nil {
		return ""
	}
	return g.Exit().Status
}

// TerminationWindow lends the supervisor stdio's window.
func (o *demoOpener) TerminationWindow() time.Duration { return o.stdio(1).TerminationWindow() }
