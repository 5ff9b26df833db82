package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call calls a tool by its public name ("<server>__<tool>"), routed
// through the Sink's Lookup to the server's supervisor under the tool's
// original name.
//
// With opts nil the server's configuration decides what happens during an
// outage: with waitForReadyMs 0 the call fails fast with a
// *NotConnectedError naming the server, its state and the next retry;
// otherwise it waits up to that long for the server to be established (the
// wait alone is bounded, not the call that follows). Non-nil opts are
// passed to Supervisor.Call as they are. A call in flight when its server
// dies fails with ErrConnectionLost and is never replayed.
//
// A server the pool is starting, restarting after a config change, or
// holding back until its predecessor's process is proven gone has no tools
// registered yet; a call of one of its names (the server part of a public
// name is everything before its first "__", tools.CheckServerName) is an
// outage like any other: *NotConnectedError, or a wait with WaitForReady.
// Only a name no server of the pool could own, or one its established
// server does not offer, is ErrUnknownTool.
func (p *Pool) Call(ctx context.Context, public string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	lk, ok := p.sink.(tools.Lookuper)
	if !ok {
		return nil, fmt.Errorf("mcpkeep: pool: call %q: sink %T cannot look tools up", public, p.sink)
	}
	var timeout <-chan time.Time
	for {
		server, t, registered := lk.Lookup(public)
		if !registered {
			server, _, _ = strings.Cut(public, "__")
		}
		p.mu.Lock()
		ps := p.mu.servers[server]
		var waiting *Supervisor
		if ps != nil {
			waiting = ps.waiting
		}
		p.mu.Unlock()
		if ps == nil {
			if registered {
				return nil, fmt.Errorf("mcpkeep: tool %q: %w (server %q is not running)", public, ErrUnknownTool, server)
			}
			return nil, fmt.Errorf("mcpkeep: tool %q: %w", public, ErrUnknownTool)
		}
		if opts == nil && ps.cfg.WaitForReady > 0 {
			opts = &CallOptions{WaitForReady: true, ReadyTimeout: ps.cfg.WaitForReady}
		}
		if registered {
			return ps.sup.Call(ctx, t.Name, args, opts)
		}
		// Not registered: the server is not (yet) serving its tools. Take
		// the change channel before looking again, so no change between
		// the look and the wait is missed.
		changed := ps.sup.Changed()
		if _, _, ok := lk.Lookup(public); ok {
			continue
		}
		snap := ps.sup.State()
		select {
		case <-ps.ready:
			if ps.err != nil {
				return nil, fmt.Errorf("mcpkeep: tool %q: %w (server %q did not start: %w)", public, ErrUnknownTool, server, ps.err)
			}
		default:
		}
		switch snap.State {
		case fsm.Connecting, fsm.Lost, fsm.BackingOff:
		default: // established, exhausted, draining, disposed: it does not offer the tool
			if snap.Started {
				return nil, fmt.Errorf("mcpkeep: tool %q: %w (server %q is %s)", public, ErrUnknownTool, server, snap.State)
			}
		}
		nc := &NotConnectedError{Server: server, State: snap.State, NextRetry: snap.NextRetry, LastErr: snap.LastErr}
		if !snap.Started {
			nc.State = fsm.Connecting
			nc.LastErr = errStarting
			if waiting != nil {
				nc.LastErr = ErrWaiting
			}
		}
		if opts == nil || !opts.WaitForReady {
			return nil, nc
		}
		if timeout == nil && opts.ReadyTimeout > 0 {
			tm := p.clock.Timer(opts.ReadyTimeout)
			defer tm.Stop()
			timeout = tm.C
		}
		var ready <-chan struct{}
		select {
		case <-ps.ready:
		default:
			ready = ps.ready
		}
		select {
		case <-ready:
		case <-changed:
		case <-timeout:
			return nil, nc
		case <-ctx.Done():
			return nil, errors.Join(nc, ctx.Err())
		}
	}
}

// errStarting is the cause a NotConnectedError gives for a server the pool
// is starting.
var errStarting = errors.New("starting")
