package mcpkeep

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Supervisor keeps one MCP server connected.
//
// Its state has three owners, and every field says which:
//   - lc, the lifecycle, is owned by the loop goroutine: the fsm.Machine,
//     the generations, the budget, the timers and the sync state. Nothing
//     else reads or writes it; everything else sends the loop a message.
//   - mu guards what the host reads and what Start and Dispose hand over
//     (the published snapshot, the start and dispose outcomes).
//   - live and the counters are atomics, read lock-free by Call and Stats.
type Supervisor struct {
	opts resolved

	inbox chan message
	done  chan struct{} // closed when the loop has returned
	stop  chan struct{} // closed by the loop on exit: releases watchers
	// released is closed once the server's name was released in the Sink:
	// every generation's close barrier completed (see Released).
	released     chan struct{}
	releasedOnce sync.Once
	wg           sync.WaitGroup
	obs          observers

	// live is the established generation, read lock-free by Call.
	live atomic.Pointer[generation]
	// served is the InitializeResult of the last generation that was
	// established (kept through an outage; see ServerInfo).
	served atomic.Pointer[mcp.InitializeResult]
	// dropped counts stale and duplicate signals (Stats).
	dropped atomic.Uint64
	// replays counts the lost calls sent once more (CallsReplayed).
	replays atomic.Uint64
	// held counts and logs the requests held through an outage (held.go).
	held heldCalls
	// active counts the requests in flight (Snapshot.InFlight) and
	// lastUse is when the last one began or ended (clock UnixNano), when
	// an idle stop is set. endUse is useEnd, bound once (beginCall).
	active  atomic.Int64
	lastUse atomic.Int64
	endUse  func()
	// syncHold: a demand start's lists wait for the requests to end
	// (holdSync); useEnd tells the loop when they did.
	syncHold atomic.Bool

	mu struct {
		sync.Mutex
		// snap is the last published snapshot; changed is closed and
		// replaced whenever snap changes (WaitForReady and hosts wait on it).
		snap       Snapshot
		changed    chan struct{}
		started    bool
		prepared   bool // the name is reserved and the cache's hint registered (prepare)
		disposed   bool // Dispose called before Start: nothing ever ran
		disposeErr error
		activation chan error // the Start's first attempt outcome, once
	}

	// sticky is the session state the host set up (see sticky.go), under
	// its own lock.
	sticky sticky
	// levelSet: SetLoggingLevel was called (Call skips the lock before).
	levelSet atomic.Bool

	// lc is owned by the loop goroutine (see lifecycle).
	lc *lifecycle

	// testHooks are seams for the race table; nil in production.
	testHooks *testHooks
}

// New validates opts and returns a supervisor that has not started.
func New(opts Options) (*Supervisor, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		opts:  r,
		inbox: make(chan message, 64),
		done:  make(chan struct{}),
		stop:  make(chan struct{}),

		released: make(chan struct{}),
	}
	s.mu.changed = make(chan struct{})
	s.mu.snap = Snapshot{Server: r.Name, State: fsm.Connecting, MaxAttempts: r.policy.MaxAttempts}
	s.lc = newLifecycle(s)
	s.endUse = s.useEnd
	s.sticky.roots, s.sticky.haveRoots = slices.Clone(r.Roots), r.Roots != nil
	return s, nil
}

// Name returns the server's name.
func (s *Supervisor) Name() string { return s.opts.Name }

// Policy returns the resolved reconnect policy.
func (s *Supervisor) Policy() backoff.Policy { return s.opts.policy }

// Start reserves the server's name in the sink and starts supervising. It
// waits for the first attempt to settle (established, or failed and
// retrying) or for ctx.
//
// With FailOnStartupError a failed first attempt makes Start return that
// attempt's error, after the supervisor was disposed and every goroutine
// joined. Otherwise Start returns nil and recovery continues in the
// background.
//
// When ctx ends first, Start returns ctx's error and the supervisor keeps
// running (its first attempt may still succeed): the caller owns it and
// must Dispose it, as after any successful Start.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.mu.disposed:
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, ErrDisposed)
	case s.mu.started:
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, ErrAlreadyStarted)
	}
	prepared := s.mu.prepared
	if !prepared {
		if err := s.opts.Sink.Reserve(s.opts.Name); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, err)
		}
	}
	s.mu.started = true
	s.mu.snap.Started = true
	s.mu.activation = make(chan error, 1)
	act := s.mu.activation
	s.mu.Unlock()
	if !prepared {
		s.lc.settled = s.lc.loadHint() // the loop is not running yet: lc is ours
	}

	go s.loop()
	if h := s.testHooks; h != nil && h.startWait != nil {
		h.startWait()
	}

	// The loop reports the activation outcome before it can finish, so
	// waiting on act alone (not on done) never loses the attempt's error.
	select {
	case err := <-act:
		if err != nil && s.opts.FailOnStartupError {
			<-s.done
			s.wg.Wait()
			return fmt.Errorf("mcpkeep: server %q: startup: %w", s.opts.Name, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prepare reserves the name and registers the cached catalog (the hint)
// without spawning anything, so a pool registers every server's hint
// before any of them starts a process (whose start-up would compete for
// the CPU the host's first answers need; docs/design.md §20). Start then
// skips both. It must not run concurrently with Start.
func (s *Supervisor) prepare() error {
	s.mu.Lock()
	switch {
	case s.mu.disposed:
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, ErrDisposed)
	case s.mu.started || s.mu.prepared:
		s.mu.Unlock()
		return nil
	}
	if err := s.opts.Sink.Reserve(s.opts.Name); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("mcpkeep: server %q: start: %w", s.opts.Name, err)
	}
	s.mu.prepared = true
	s.mu.Unlock()
	// Outside the lock: the sinks' subscribers may read the supervisor.
	s.lc.settled = s.lc.loadHint()
	return nil
}

// Dispose shuts the supervisor down to quiescence: the current generation
// is closed through its barrier, timers are stopped, tools unregistered and
// every goroutine joined. It returns ErrIncompleteShutdown when the barrier
// did not complete within the termination window, or ctx's error if ctx
// ends first (the drain then continues in the background).
func (s *Supervisor) Dispose(ctx context.Context) error {
	s.mu.Lock()
	if !s.mu.started {
		s.mu.disposed = true
		s.mu.snap.State = fsm.Disposed
		prepared := s.mu.prepared
		s.mu.Unlock()
		if prepared { // the hint was registered: remove it with the name
			s.opts.Catalog.RemoveCatalog(s.opts.Name)
		}
		s.releaseName(prepared)
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
	err := s.mu.disposeErr
	s.mu.Unlock()
	if err == nil {
		s.wg.Wait()
	}
	return err
}

// ServerInfo returns what the server said of itself when the last
// established generation connected (its serverInfo, capabilities and
// instructions), or nil before the first connection.
func (s *Supervisor) ServerInfo() *mcp.InitializeResult { return s.served.Load() }

// Done is closed when the supervisor's loop has ended (disposed).
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Released is closed once the server's name is free again in the Sink:
// at the end of a complete drain, or, after an incomplete shutdown
// (ErrIncompleteShutdown), only when the late close signals of every
// generation arrived. Until then the name stays quarantined (Reserve
// fails with tools.ErrQuarantined in a tools.Set): a replacement must
// never run beside a process that may still live (docs/design.md §6).
func (s *Supervisor) Released() <-chan struct{} { return s.released }

// releaseName releases the name in the sink (if it was reserved) and
// closes released, once.
func (s *Supervisor) releaseName(reserved bool) {
	s.releasedOnce.Do(func() {
		if reserved {
			s.opts.Sink.Release(s.opts.Name)
		}
		close(s.released)
	})
}

// awaitRelease is the quarantine of an incomplete shutdown: it waits for
// the supervisor's goroutines (an attempt ends what it opened, a closer
// returns) and for every generation's close signal, then frees the name.
// It lives as long as a process of the server may live.
func (s *Supervisor) awaitRelease(gone []<-chan struct{}) {
	s.wg.Wait()
	for _, c := range gone {
		<-c
	}
	s.releaseName(true)
}

// Reconnect restarts the server by hand: from established it closes the
// current generation, from backing-off it skips the wait, from exhausted
// it resets the budget and connects, from idle it connects. Elsewhere it returns an error
// matching fsm.ErrNotDeclared and changes nothing.
func (s *Supervisor) Reconnect() error {
	s.mu.Lock()
	started := s.mu.started
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

// State returns a snapshot of the supervisor, with the requests in
// flight at this moment.
func (s *Supervisor) State() Snapshot {
	s.mu.Lock()
	snap := s.mu.snap
	s.mu.Unlock()
	snap.InFlight = int(max(s.active.Load(), 0))
	return snap
}

// Changed returns a channel closed at the next snapshot change.
func (s *Supervisor) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.changed
}

// Stats returns the loop's counters.
func (s *Supervisor) Stats() Stats {
	st := Stats{Dropped: s.dropped.Load(), Rejected: map[string]uint64{}, Refused: s.lc.refusedItems.Load()}
	for key, n := range s.lc.rejected { // never written after New
		if v := n.Load(); v > 0 {
			st.Rejected[key] = v
		}
	}
	return st
}

// Subscribe registers an observer of transitions; see Observer for what it
// may do. The returned function removes it.
func (s *Supervisor) Subscribe(fn Observer) (unsubscribe func()) { return s.obs.add(fn) }

// send delivers m to the loop, or reports false once the loop has exited.
// A message sent while the loop exits may still be buffered and never
// handled: what the loop must own goes by handoff.
func (s *Supervisor) send(m message) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	select {
	case s.inbox <- m:
		return true
	case <-s.done:
		return false
	}
}

// handoff sends m and reports whether the loop took it: a message whose
// content the loop must own (an open transport, a session) is the
// sender's to clean up when the loop ended before taking it. The loop
// closes ack before it can finish, so done closed with ack open means
// the message was never handled.
func (s *Supervisor) handoff(m message) bool {
	m.ack = make(chan struct{})
	if !s.send(m) {
		return false
	}
	select {
	case <-m.ack:
		return true
	case <-s.done:
		select {
		case <-m.ack:
			return true
		default:
			return false
		}
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
