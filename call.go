package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallOptions tune one Call.
type CallOptions struct {
	// WaitForReady blocks while the server is connecting, lost or backing
	// off, until it is established; it fails on exhausted, disposed or the
	// end of ctx.
	WaitForReady bool
	// ReadyTimeout, with WaitForReady, bounds the wait for the server (on
	// the supervisor's clock) without bounding the call that follows;
	// zero waits as long as ctx allows.
	ReadyTimeout time.Duration
}

// Call calls a tool by its original (server-side) name. During an outage
// it fails fast with a *NotConnectedError unless WaitForReady is set. A
// call in flight when its generation ends fails with ErrConnectionLost and
// is never replayed; a call the SDK refused to send because the connection
// had just ended (before the supervisor noticed) was never delivered, so it
// takes the outage path instead.
func (s *Supervisor) Call(ctx context.Context, tool string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	var timeout <-chan time.Time
	for {
		if g := s.live.Load(); g != nil {
			res, sent, err := g.call(ctx, s.opts.Name, tool, args)
			if sent || ctx.Err() != nil {
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
		s.mu.Lock()
		snap, changed, started := s.mu.snap, s.mu.changed, s.mu.started
		s.mu.Unlock()
		if s.live.Load() != nil {
			continue // established between the two loads
		}
		nc := &NotConnectedError{Server: s.opts.Name, State: snap.State, NextRetry: snap.NextRetry, LastErr: snap.LastErr}
		if !started && snap.State != fsm.Disposed {
			return nil, fmt.Errorf("mcpkeep: server %q: %w", s.opts.Name, ErrNotStarted)
		}
		if opts == nil || !opts.WaitForReady || snap.State == fsm.Exhausted || snap.State == fsm.Disposed || snap.State == fsm.Draining {
			return nil, nc
		}
		if timeout == nil && opts.ReadyTimeout > 0 {
			t := s.opts.Clock.Timer(opts.ReadyTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return nil, nc
		case <-ctx.Done():
			return nil, errors.Join(nc, ctx.Err())
		}
	}
}
