package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Supervisor keeps one MCP server connected. One goroutine (the loop) owns
// its FSM and all lifecycle state; every other goroutine talks to it by
// message, and every message carries its generation.
type Supervisor struct {
	opts resolved

	inbox chan message
	done  chan struct{} // closed when the loop has returned
	stop  chan struct{} // closed by the loop on exit: releases watchers
	wg    sync.WaitGroup
	obs   observers

	// live is the established generation, read lock-free by Call.
	live atomic.Pointer[generation]
	// dropped counts stale and duplicate signals (Stats).
	dropped atomic.Uint64

	mu sync.Mutex // guards the fields below
	// snap is the last published snapshot; changed is closed and replaced
	// whenever snap changes (WaitForReady and hosts wait on it).
	snap       Snapshot
	changed    chan struct{}
	started    bool
	disposed   bool // Dispose called before Start: nothing ever ran
	disposeErr error
	activation chan error // the Start's first attempt outcome, once

	// Owned by the loop goroutine.
	m          *fsm.Machine
	budget     *backoff.Budget
	cur        *generation
	lostGen    *generation            // the generation Lost waits on
	gens       map[uint64]*generation // every generation whose close barrier is not complete
	nextGen    uint64
	retryTimer *clock.Timer
	retrySeq   uint64
	nextRetry  time.Time
	drainTimer *clock.Timer
	syncing    *generation // the generation of the running tools sync
	syncDirty  bool        // a list_changed arrived during the running sync
	lastErr    error
	toolCount  int
	finished   bool
	activated  bool // the activation outcome was reported
}

// New validates opts and returns a supervisor that has not started.
func New(opts Options) (*Supervisor, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		opts:    r,
		inbox:   make(chan message, 64),
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
		changed: make(chan struct{}),
		m:       fsm.New(),
		budget:  backoff.NewBudget(r.policy),
		gens:    make(map[uint64]*generation),
	}
	s.snap = Snapshot{Server: r.Name, State: fsm.Connecting, MaxAttempts: r.policy.MaxAttempts}
	return s, nil
}

// Name returns the server's name.
func (s *Supervisor) Name() string { return s.opts.Name }

// Policy returns the resolved reconnect policy.
func (s *Supervisor) Policy() backoff.Policy { return s.opts.policy }

// Start reserves the server's name in the sink and starts supervising. It
// waits for the first attempt to settle (established, or failed and
// retrying) or for ctx. With FailOnStartupError it returns that attempt's
// error and leaves the supervisor disposed; otherwise it returns nil and
// recovery continues in the background.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.disposed:
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, ErrDisposed)
	case s.started:
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: already started", s.opts.Name)
	}
	if err := s.opts.Sink.Reserve(s.opts.Name); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, err)
	}
	s.started = true
	s.snap.Started = true
	s.activation = make(chan error, 1)
	act := s.activation
	s.mu.Unlock()

	go s.loop()

	select {
	case err := <-act:
		if err != nil && s.opts.FailOnStartupError {
			<-s.done
			s.wg.Wait()
			return fmt.Errorf("mcpkeep: server %q: startup: %w", s.opts.Name, err)
		}
		return nil
	case <-s.done:
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, ErrDisposed)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dispose shuts the supervisor down to quiescence: the current generation
// is closed through its barrier, timers are stopped, tools unregistered and
// every goroutine joined. It returns ErrIncompleteShutdown when the barrier
// did not complete within the termination window, or ctx's error if ctx
// ends first (the drain then continues in the background).
func (s *Supervisor) Dispose(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.disposed = true
		s.snap.State = fsm.Disposed
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.send(message{kind: mDispose})
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	err := s.disposeErr
	s.mu.Unlock()
	if err == nil {
		s.wg.Wait()
	}
	return err
}

// Reconnect restarts the server by hand: from established it closes the
// current generation, from backing-off it skips the wait, from exhausted
// it resets the budget and connects. Elsewhere it returns an error
// matching fsm.ErrNotDeclared and changes nothing.
func (s *Supervisor) Reconnect() error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", s.opts.Name, ErrNotStarted)
	}
	reply := make(chan error, 1)
	if !s.send(message{kind: mReconnect, reply: reply}) {
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", s.opts.Name, ErrDisposed)
	}
	select {
	case err := <-reply:
		return err
	case <-s.done:
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", s.opts.Name, ErrDisposed)
	}
}

// State returns a snapshot of the supervisor.
func (s *Supervisor) State() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

// Changed returns a channel closed at the next snapshot change.
func (s *Supervisor) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Stats returns the loop's counters.
func (s *Supervisor) Stats() Stats { return Stats{Dropped: s.dropped.Load()} }

// Subscribe registers an observer of transitions; see Observer for what it
// may do. The returned function removes it.
func (s *Supervisor) Subscribe(fn Observer) (unsubscribe func()) { return s.obs.add(fn) }

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
		snap, changed, started := s.snap, s.changed, s.started
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

// send delivers m to the loop, or reports false once the loop has exited.
func (s *Supervisor) send(m message) bool {
	select {
	case s.inbox <- m:
		return true
	case <-s.done:
		return false
	}
}

// sendOrAbandon is send for SDK callbacks: it also gives up when the
// generation ends, so a full inbox can never wedge the SDK's read loop.
func (s *Supervisor) sendOrAbandon(ctx context.Context, m message) {
	select {
	case s.inbox <- m:
	case <-s.done:
	case <-ctx.Done():
	}
}
