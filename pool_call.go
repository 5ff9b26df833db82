package mcpkeep

import (
	"context"
	"encoding/json"
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
// With opts nil (or opts that set only Progress) the server's
// configuration decides what happens during an outage: with waitForReadyMs 0 the call fails fast with a
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
	lookup, err := p.toolLookup(public)
	if err != nil {
		return nil, err
	}
	return routeByName(p, ctx, "tool", public, ErrUnknownTool, opts, lookup,
		func(sup *Supervisor, name string, opts *CallOptions) (*mcp.CallToolResult, error) {
			return sup.Call(ctx, name, args, opts)
		})
}

// CallRaw is Call for a relay (Supervisor.CallRaw): the arguments and the
// result stay JSON.
func (p *Pool) CallRaw(ctx context.Context, public string, args json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	lookup, err := p.toolLookup(public)
	if err != nil {
		return nil, err
	}
	return routeByName(p, ctx, "tool", public, ErrUnknownTool, opts, lookup,
		func(sup *Supervisor, name string, opts *CallOptions) (json.RawMessage, error) {
			return sup.CallRaw(ctx, name, args, opts)
		})
}

// toolLookup finds a public tool name's server and original name in the
// pool's Sink.
func (p *Pool) toolLookup(public string) (func() (server, name string, ok bool), error) {
	lk, ok := p.sink.(tools.Lookuper)
	if !ok {
		return nil, fmt.Errorf("mcpkeep: pool: call %q: sink %T cannot look tools up", public, p.sink)
	}
	return func() (string, string, bool) {
		server, t, ok := lk.Lookup(public)
		return server, t.Name, ok
	}, nil
}

// GetPrompt gets a prompt by its public name ("<server>__<prompt>"), with
// Call's routing and outage semantics (ErrUnknownPrompt where Call says
// ErrUnknownTool).
func (p *Pool) GetPrompt(ctx context.Context, public string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, error) {
	cat, err := p.lookupCatalog("get prompt " + public)
	if err != nil {
		return nil, err
	}
	lookup := func() (string, string, bool) {
		pr, ok := cat.Prompt(public)
		return pr.Server, pr.Name, ok
	}
	return routeByName(p, ctx, "prompt", public, ErrUnknownPrompt, opts, lookup,
		func(sup *Supervisor, name string, opts *CallOptions) (*mcp.GetPromptResult, error) {
			return sup.GetPrompt(ctx, name, args, opts)
		})
}

// routeByName is the routing of Call and GetPrompt: a registered public
// name goes to its server under its original name; a name of a server
// that is starting or restarting is an outage (see Call).
func routeByName[R any](p *Pool, ctx context.Context, what, public string, unknown error, opts *CallOptions,
	lookup func() (server, name string, ok bool), do func(*Supervisor, string, *CallOptions) (R, error)) (R, error) {
	var zero R
	var timeout <-chan time.Time
	for {
		server, name, registered := lookup()
		if !registered {
			server, _, _ = strings.Cut(public, "__")
		}
		ps, waiting := p.entry(server)
		if ps == nil {
			if registered {
				// Removed by an Apply and still draining: its tools go
				// when the drain ends; until then it answers as an outage.
				if old := p.lastRetired(server); old != nil {
					return do(old, name, opts)
				}
				return zero, fmt.Errorf("mcpkeep: %s %q: %w (server %q is not running)", what, public, unknown, server)
			}
			return zero, fmt.Errorf("mcpkeep: %s %q: %w", what, public, unknown)
		}
		opts = p.defaultOpts(ps, opts)
		if ps.held.Load() {
			// Left to the staggered start: a request starts it now, and
			// then waits for it as for any server starting from its cache.
			_ = p.startOnce(p.base, ps) // a failure answers below
		}
		if registered && ps.sup.State().Started {
			return do(ps.sup, name, opts)
		}
		// Not registered, or still registered by a predecessor while its
		// replacement has not started: the server is not (yet) serving
		// its lists. Take the change channel before looking again, so no
		// change between the look and the wait is missed.
		changed := ps.sup.Changed()
		if _, _, ok := lookup(); ok && ps.sup.State().Started {
			continue
		}
		nc, err := p.notServing(ps, waiting, what, public, unknown)
		if err != nil {
			return zero, err
		}
		if opts == nil || !opts.WaitForReady {
			return zero, nc
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
			return zero, nc
		case <-ctx.Done():
			return zero, errors.Join(nc, ctx.Err())
		}
	}
}

// lastRetired returns the newest retired supervisor of server, or nil.
func (p *Pool) lastRetired(server string) *Supervisor {
	p.mu.Lock()
	defer p.mu.Unlock()
	if list := p.mu.retired[server]; len(list) > 0 {
		return list[len(list)-1]
	}
	return nil
}

// entry returns server's pool entry and the predecessor it waits for.
func (p *Pool) entry(server string) (*poolServer, *Supervisor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.mu.servers[server]
	if ps == nil {
		return nil, nil
	}
	return ps, ps.waiting
}

// defaultOpts: opts nil, or opts that set only Progress, wait as the
// server's configured waitForReadyMs says.
func (p *Pool) defaultOpts(ps *poolServer, opts *CallOptions) *CallOptions {
	if ps.cfg.WaitForReady <= 0 {
		return opts
	}
	switch {
	case opts == nil:
		return &CallOptions{WaitForReady: true, ReadyTimeout: ps.cfg.WaitForReady}
	case !opts.WaitForReady && opts.ReadyTimeout == 0:
		o := *opts
		o.WaitForReady, o.ReadyTimeout = true, ps.cfg.WaitForReady
		return &o
	}
	return opts
}

// notServing explains why a server of the pool does not have a name: an
// outage (*NotConnectedError) while it starts, restarts or retries, the
// unknown error once it serves (or gave up) without the name.
func (p *Pool) notServing(ps *poolServer, waiting *Supervisor, what, public string, unknown error) (*NotConnectedError, error) {
	server := ps.cfg.Name
	select {
	case <-ps.ready:
		if ps.err != nil {
			return nil, fmt.Errorf("mcpkeep: %s %q: %w (server %q did not start: %w)", what, public, unknown, server, ps.err)
		}
	default:
	}
	snap := ps.sup.State()
	switch snap.State {
	case fsm.Connecting, fsm.Lost, fsm.BackingOff:
	default: // established, exhausted, draining, disposed: it does not offer the name
		if snap.Started {
			return nil, fmt.Errorf("mcpkeep: %s %q: %w (server %q is %s)", what, public, unknown, server, snap.State)
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
	return nc, nil
}

// errStarting is the cause a NotConnectedError gives for a server the pool
// is starting.
var errStarting = errors.New("starting")
