package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallOptions tune one request (Call, GetPrompt, ReadResource, Complete).
type CallOptions struct {
	// WaitForReady blocks while the server is connecting, lost or backing
	// off, until it is established; it fails on exhausted (given up,
	// signed out, reconnect disabled), disposed or the end of ctx.
	WaitForReady bool
	// ReadyTimeout, with WaitForReady, bounds the wait for the server (on
	// the supervisor's clock) without bounding the request that follows;
	// zero waits as long as ctx allows. A server backing off whose next
	// attempt is due after the bound fails the request at once.
	ReadyTimeout time.Duration
	// Progress, when set, receives the server's notifications/progress
	// for this request (the supervisor gives the request a progress token
	// of its own), on an SDK goroutine, until the request returns.
	Progress func(*mcp.ProgressNotificationParams)
	// LogLevel, when set, is the logging level of this request alone (a
	// server on protocol 2026-07-28 takes the level per request; the
	// proxy passes a host's on). Otherwise the level of SetLoggingLevel.
	LogLevel mcp.LoggingLevel
	// TaskRelay, on CallRaw, declares a tasks extension to the server and
	// hears which generation answered (task_relay.go; docs/design.md §25).
	TaskRelay *TaskRelay
}

// Call calls a tool by its original (server-side) name. During an outage
// it fails fast with a *NotConnectedError unless WaitForReady is set. A
// call in flight when its generation ends fails with ErrConnectionLost;
// it is sent once more on the next generation (docs/design.md §21) only
// when the tool declares readOnlyHint or idempotentHint and
// Options.NoReplay is not set. A call the SDK refused to send because the
// connection had just ended (before the supervisor noticed) was never
// delivered, so it takes the outage path instead. Cancelling ctx cancels
// the call on the server too (notifications/cancelled). A tool that
// Options.Expose hides is an error matching ErrUnknownTool.
func (s *Supervisor) Call(ctx context.Context, tool string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	level, done, err := s.beginCall(tool, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	w := readyWait{hb: newHeartbeat(opts)}
	defer w.stop()
	return s.callLoop(ctx, tool, args, opts, level, &w, nil, nil)
}

// beginCall is what Call and CallRaw do first: refuse a tool Expose
// hides, settle the request's log level, and count the request for the
// request in flight until done (useBegin).
func (s *Supervisor) beginCall(tool string, opts *CallOptions) (level mcp.LoggingLevel, done func(), err error) {
	if !s.opts.Expose.AdmitsTool(tool) {
		return "", nil, fmt.Errorf("mcpkeep: server %q: tool %q: %w", s.opts.Name, tool, ErrUnknownTool)
	}
	if opts != nil {
		level = opts.LogLevel
	}
	if level == "" {
		level = s.levelFast()
	}
	s.useBegin()
	return level, s.endUse, nil
}

// callLoop is Call's outage loop. A call already lost on lostGen (with
// lost) is the replay's: it waits for the next generation first, and is
// sent at most once more.
func (s *Supervisor) callLoop(ctx context.Context, tool string, args any, opts *CallOptions, level mcp.LoggingLevel,
	w *readyWait, lost error, lostGen *generation) (*mcp.CallToolResult, error) {
	if lostGen != nil {
		if err := s.holdForReplay(ctx, lostGen, w); err != nil {
			return nil, notReplayed(lost, err)
		}
	}
	for {
		if g := s.live.Load(); g != nil {
			res, sent, err := g.call(ctx, s.opts.Name, tool, args, w.hb.progress(), level)
			if sent || ctx.Err() != nil {
				if lost != nil {
					s.replayed(g, tool, err)
					return res, err
				}
				if s.mayReplay(ctx, g, tool, err) {
					lost = err
					if err := s.holdForReplay(ctx, g, w); err != nil {
						return nil, notReplayed(lost, err)
					}
					continue
				}
				return res, err
			}
			// Not sent: wait for the loop to end g, then go round again.
			select {
			case <-g.ctx.Done():
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := s.awaitReady(ctx, w.opts(opts), w); err != nil {
			if lost != nil {
				return nil, notReplayed(lost, err)
			}
			return nil, err
		}
	}
}

// GetPrompt gets a prompt by its original (server-side) name, with Call's
// outage semantics (*NotConnectedError, WaitForReady; never replayed after
// a loss). A prompt the established server does not list is an error
// matching ErrUnknownPrompt.
func (s *Supervisor) GetPrompt(ctx context.Context, name string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, error) {
	return request(s, ctx, opts, func(ctx context.Context, g *generation, token any) (*mcp.GetPromptResult, error) {
		if v := g.view.Load(); v == nil || !v.prompts[name] {
			return nil, fmt.Errorf("mcpkeep: server %q: prompt %q: %w", s.opts.Name, name, ErrUnknownPrompt)
		}
		p := &mcp.GetPromptParams{Name: name, Arguments: args}
		s.withLevel(g, &p.Meta, opts)
		if token != nil {
			p.SetProgressToken(token)
		}
		return g.cs.GetPrompt(ctx, p)
	})
}

// ReadResource reads the resource at uri, with Call's outage semantics. A
// URI the established server neither lists nor matches with one of its
// templates is an error matching ErrUnknownResource.
func (s *Supervisor) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	return request(s, ctx, opts, func(ctx context.Context, g *generation, token any) (*mcp.ReadResourceResult, error) {
		if !g.view.Load().hasResource(uri) {
			return nil, fmt.Errorf("mcpkeep: server %q: resource %q: %w", s.opts.Name, uri, ErrUnknownResource)
		}
		p := &mcp.ReadResourceParams{URI: uri}
		s.withLevel(g, &p.Meta, opts)
		if token != nil {
			p.SetProgressToken(token)
		}
		return g.cs.ReadResource(ctx, p)
	})
}

// Complete asks the server to complete a prompt's or a resource
// template's argument (completion/complete, names and URIs as the server
// knows them), with Call's outage semantics.
func (s *Supervisor) Complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, fmt.Errorf("mcpkeep: server %q: complete: a reference (ref) is required", s.opts.Name)
	}
	return request(s, ctx, opts, func(ctx context.Context, g *generation, _ any) (*mcp.CompleteResult, error) {
		return g.cs.Complete(ctx, params)
	})
}

// request is Call's outage loop for every other request: fn runs on the
// established generation with the request's context (see
// generation.begin) and, when opts ask for progress, a token.
func request[R any](s *Supervisor, ctx context.Context, opts *CallOptions, fn func(context.Context, *generation, any) (R, error)) (R, error) {
	var zero R
	s.useBegin()
	defer s.useEnd()
	w := readyWait{hb: newHeartbeat(opts)}
	defer w.stop()
	for {
		if g := s.live.Load(); g != nil {
			res, sent, err := run(g, ctx, s.opts.Name, w.hb.progress(), fn)
			if sent || ctx.Err() != nil {
				return res, err
			}
			select {
			case <-g.ctx.Done():
				continue
			case <-ctx.Done():
				return zero, ctx.Err()
			}
		}
		if err := s.awaitReady(ctx, opts, &w); err != nil {
			return zero, err
		}
	}
}

// run is generation.call for any request.
func run[R any](g *generation, ctx context.Context, server string, progress func(*mcp.ProgressNotificationParams), fn func(context.Context, *generation, any) (R, error)) (res R, sent bool, err error) {
	sc, ok := g.begin(ctx)
	if !ok {
		return res, false, nil
	}
	defer g.end(sc)
	var token any
	if progress != nil {
		tok := g.addProgress(progress)
		defer g.removeProgress(tok)
		token = tok
	}
	res, err = fn(sc.ctx, g, token)
	if sent, err = g.settle(ctx, server, err); !sent {
		var zero R
		return zero, false, err
	}
	return res, true, err
}

// readyWait is what one request keeps while it is held: its ReadyTimeout
// timer, armed once (re-armed for a replay), and its heartbeat.
type readyWait struct {
	t  *clock.Timer
	hb *heartbeat
	// deadline is when t fires (zero without a bound): a retry due after
	// it is not waited for.
	deadline time.Time
	held     bool // counted as held through an outage (held.go)
	// replay is the wait of a lost call for the generation that repeats
	// it, bounded by Options.ReplayWait (at least the connect timeout).
	replay *CallOptions
	ct     *callTrace // the request's trace, once it waited (docs/design.md §27)
}

func (w *readyWait) stop() {
	if w.t != nil {
		w.t.Stop()
	}
	w.hb.stop()
	w.ct.done()
}

// opts are the request's options, or the replay's wait once it has one.
func (w *readyWait) opts(opts *CallOptions) *CallOptions {
	if w.replay != nil {
		return w.replay
	}
	return opts
}

// awaitReady is what a request does while no generation is established:
// fail fast with a *NotConnectedError, or, with WaitForReady, wait for the
// next snapshot change (bounded by ReadyTimeout and ctx) and return nil
// so the caller looks again.
func (s *Supervisor) awaitReady(ctx context.Context, opts *CallOptions, w *readyWait) error {
	s.mu.Lock()
	snap, changed, started := s.mu.snap, s.mu.changed, s.mu.started
	s.mu.Unlock()
	if s.live.Load() != nil {
		return nil // established between the two loads
	}
	nc := &NotConnectedError{Server: s.opts.Name, State: snap.State, NextRetry: snap.NextRetry, LastErr: snap.LastErr}
	if !started && snap.State != fsm.Disposed {
		return fmt.Errorf("mcpkeep: server %q: %w", s.opts.Name, ErrNotStarted)
	}
	// An idle server (or one being stopped for idleness) is started for
	// the request; a server still starting is waited for, bounded by its
	// connect timeout (and an idle stop's barrier), whatever opts say
	// (docs/design.md §20).
	demand := snap.State == fsm.Idle || snap.IdleStopping && snap.State == fsm.Lost
	if demand {
		s.send(message{kind: mDemand})
	}
	starting := snap.Starting || demand
	if !starting && (opts == nil || !opts.WaitForReady || snap.State == fsm.Exhausted || snap.State == fsm.Disposed || snap.State == fsm.Draining) {
		return nc
	}
	if w.t == nil {
		switch {
		case opts != nil && opts.WaitForReady && opts.ReadyTimeout > 0:
			w.t = s.opts.Clock.Timer(opts.ReadyTimeout)
			w.deadline = s.opts.Clock.Now().Add(opts.ReadyTimeout)
		case starting && (opts == nil || !opts.WaitForReady):
			bound := s.opts.ConnectTimeout
			if demand {
				bound += s.opts.TerminationWindow
			}
			w.t = s.opts.Clock.Timer(bound)
		}
	}
	if !starting {
		// Never a pointless wait (docs/design.md §6): a server that will
		// not even try again within the bound fails the request now, with
		// the same text as fail-fast.
		if snap.State == fsm.BackingOff && !w.deadline.IsZero() && snap.NextRetry.After(w.deadline) {
			return nc
		}
		if !w.held && w.replay == nil {
			w.held = true
			var bound time.Duration
			if opts != nil {
				bound = opts.ReadyTimeout
			}
			s.hold(snap, bound)
		}
	}
	var timeout <-chan time.Time
	if w.t != nil {
		timeout = w.t.C
	}
	w.traceWait(ctx, s.opts.Name)
	select {
	case <-changed:
		return nil
	case <-w.hb.tick(s.opts.Clock):
		w.hb.beat(s.waitReason(w.replay != nil))
		return nil
	case <-timeout:
		return nc
	case <-ctx.Done():
		return errors.Join(nc, ctx.Err())
	}
}
