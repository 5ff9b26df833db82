package mcpkeep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// loop is the single owner of the FSM. It starts the activation attempt
// and then handles one message at a time until disposed.
func (s *Supervisor) loop() {
	defer close(s.done)
	defer close(s.stop)
	s.enterConnecting().activation = true
	s.publish()
	for !s.finished {
		s.handle(<-s.inbox)
		s.publish()
	}
}

func (s *Supervisor) handle(m message) {
	switch m.kind {
	case mOpened:
		s.onOpened(m)
	case mAttempt:
		s.onAttempt(m)
	case mConnectTimeout:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || s.m.State() != fsm.Connecting || g.failed {
			s.drop()
			return
		}
		s.onFailed(g, fmt.Errorf("%w after %s", ErrConnectTimeout, s.opts.ConnectTimeout))
	case mSessionEnded:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || g.ending || s.m.State() != fsm.Established {
			s.drop()
			return
		}
		s.onLost(g, m.err)
	case mCloseReturned:
		if g := s.gens[m.gen]; g != nil {
			g.closeDone = true
			s.checkBarrier(g)
		}
	case mGone:
		if g := s.gens[m.gen]; g != nil {
			g.gone = true
			s.checkBarrier(g)
		}
	case mTermWindow:
		s.onTermWindow(m.gen)
	case mRetryDue:
		if s.m.State() != fsm.BackingOff || m.seq != s.retrySeq {
			s.drop()
			return
		}
		s.onRetryDue()
	case mStable:
		g := s.gens[m.gen]
		if g == nil || g != s.cur || g.ending {
			s.drop()
			return
		}
		t, ok := s.fire(fsm.Stable, fsm.Facts{})
		if !ok {
			return
		}
		s.budget.Reset()
		s.emit(t, g, nil)
	case mToolsChanged:
		s.onToolsChanged(m.gen)
	case mSyncDone:
		s.onSyncDone(m)
	case mReconnect:
		m.reply <- s.onReconnect()
	case mDispose:
		s.onDispose()
	case mDrainTimeout:
		s.onDrainTimeout()
	case mInspect:
		m.probe()
	}
}

// fire applies ev. A guard that rejects (a stale generation, a repeated
// failure) or an event not declared here is dropped and counted.
func (s *Supervisor) fire(ev fsm.Event, facts fsm.Facts) (fsm.Transition, bool) {
	t, err := s.m.Fire(ev, facts)
	if err != nil {
		s.drop()
		return t, false
	}
	return t, true
}

func (s *Supervisor) drop() { s.dropped.Add(1) }

// enterConnecting starts generation n+1 (the caller has fired the event
// that leads to connecting). The attempt waits for any older generation's
// barrier first: never two live transports (I1).
func (s *Supervisor) enterConnecting() *generation {
	g := s.newGeneration()
	g.retry = g.n > 1
	s.cur = g
	s.lostGen = nil
	s.nextRetry = time.Time{}
	n := g.n
	g.connectTimer = s.opts.Clock.AfterFunc(s.opts.ConnectTimeout, func() {
		s.send(message{kind: mConnectTimeout, gen: n})
	})
	if s.barrierPending(g) {
		g.deferred = true
		return g
	}
	s.startAttempt(g)
	return g
}

func (s *Supervisor) startAttempt(g *generation) {
	g.deferred = false
	g.started = true
	s.wg.Add(1)
	go s.attempt(g)
}

// barrierPending reports whether a generation other than except has not
// completed its close barrier.
func (s *Supervisor) barrierPending(except *generation) bool {
	for _, g := range s.gens {
		if g != except && !g.barrierDone {
			return true
		}
	}
	return false
}

func (s *Supervisor) onOpened(m message) {
	g := s.gens[m.gen]
	if g == nil {
		// Cannot happen: a generation stays in gens until its barrier,
		// which needs this attempt to finish. Fail closed anyway.
		m.tg.Terminate()
		return
	}
	g.tg = m.tg
	s.wg.Add(1)
	go s.watchGone(g)
	if g.ending {
		g.tg.Terminate()
	}
}

func (s *Supervisor) onAttempt(m message) {
	g := s.gens[m.gen]
	if g == nil {
		return
	}
	g.attemptDone = true
	if g.tg == nil {
		g.gone = true // Open failed or never happened: nothing was started
	}
	if m.cs != nil {
		g.cs = m.cs
	}
	current := g == s.cur && s.m.State() == fsm.Connecting && !g.ending && !g.failed
	switch {
	case m.err == nil && current:
		s.onConnected(g, m)
	case m.err != nil && current:
		s.onFailed(g, m.err)
	default:
		s.drop() // a second failure signal (after a timeout), or a result nobody waits for
	}
	if g.cs == nil {
		g.closeDone = true // a failed Connect closes its own session
	} else if g.ending && !g.closing {
		s.startCloser(g)
	}
	s.checkBarrier(g)
}

func (s *Supervisor) onConnected(g *generation, m message) {
	if err := s.opts.Sink.Replace(s.opts.Name, g.n, m.defs); err != nil {
		err = fmt.Errorf("initial tools sync: %w", err)
		if g.activation && s.opts.FailOnStartupError {
			s.onFailed(g, err)
			return
		}
		s.lastErr = err
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	} else {
		s.toolCount = len(m.defs)
	}
	t, ok := s.fire(fsm.Connected, fsm.Facts{})
	if !ok {
		return
	}
	stopTimer(&g.connectTimer)
	s.live.Store(g)
	s.wg.Add(1)
	go s.watchSession(g)
	if sa, ok := g.tg.(transport.SessionAware); ok {
		sa.Established(g.cs)
	}
	n := g.n
	g.stableTimer = s.opts.Clock.AfterFunc(s.opts.policy.StabilityWindow(), func() {
		s.send(message{kind: mStable, gen: n})
	})
	if g.retry {
		s.log(slog.LevelInfo, "recovered", g, slog.Int("attempt", s.budget.Attempt()))
	}
	s.emit(t, g, nil)
	s.activationDone(nil)
	if g.syncDirty {
		g.syncDirty = false
		s.requestSync(g)
	}
}

// onFailed: the current connecting generation's first failure signal.
func (s *Supervisor) onFailed(g *generation, err error) {
	t, ok := s.fire(fsm.Failed, fsm.Facts{Stale: g != s.cur, Repeated: g.failed})
	if !ok {
		return
	}
	g.failed = true
	s.lastErr = err
	s.log(slog.LevelWarn, "connection failed", g, s.lossAttrs(g, err)...)
	s.endGen(g)
	s.lostGen = g
	s.emit(t, g, err)
	s.activationDone(err)
	if g.activation && s.opts.FailOnStartupError {
		s.onDispose()
		return
	}
	s.checkBarrier(g)
}

// onLost: the established generation's session ended.
func (s *Supervisor) onLost(g *generation, err error) {
	t, ok := s.fire(fsm.Closed, fsm.Facts{})
	if !ok {
		return
	}
	s.lastErr = err
	s.log(slog.LevelWarn, "connection lost", g, s.lossAttrs(g, err)...)
	s.endGen(g)
	s.lostGen = g
	s.emit(t, g, err)
	s.checkBarrier(g)
}

func (s *Supervisor) lossAttrs(g *generation, err error) []slog.Attr {
	attrs := []slog.Attr{slog.Int("attempt", s.budget.Attempt()), slog.Any("err", err)}
	if g.tg != nil {
		ex := g.tg.Exit()
		if ex.Status != "" {
			attrs = append(attrs, slog.String("exit", ex.Status))
		}
		if ex.StderrTail != "" {
			attrs = append(attrs, slog.String("stderr_tail", ex.StderrTail))
		}
	}
	return attrs
}

// endGen starts g's teardown: cancel its context (in-flight calls fail
// now), close the session, terminate the transport, and arm the barrier
// deadline. Idempotent.
func (s *Supervisor) endGen(g *generation) {
	if g.ending {
		return
	}
	g.ending = true
	if s.live.Load() == g {
		s.live.Store(nil)
	}
	stopTimer(&g.connectTimer)
	stopTimer(&g.stableTimer)
	g.cancel()
	g.endCalls()
	if s.syncing == g {
		s.syncDirty = false
	}
	if !g.started {
		// A deferred attempt never ran: nothing to wait for.
		g.attemptDone, g.closeDone, g.gone = true, true, true
		return
	}
	if g.cs != nil && !g.closing {
		s.startCloser(g)
	}
	if g.tg != nil {
		g.tg.Terminate()
	}
	n := g.n
	g.termTimer = s.opts.Clock.AfterFunc(s.opts.TerminationWindow, func() {
		s.send(message{kind: mTermWindow, gen: n})
	})
}

func (s *Supervisor) startCloser(g *generation) {
	g.closing = true
	s.wg.Add(1)
	go s.closeSession(g)
}

// checkBarrier completes g's barrier when everything behind it is proven
// released, and moves the lifecycle on if it was waiting for that.
func (s *Supervisor) checkBarrier(g *generation) {
	if g.barrierDone || !g.ending || !g.barrierComplete() {
		return
	}
	g.barrierDone = true
	stopTimer(&g.termTimer)
	// Nothing of g is left to report: later signals for it are stale.
	delete(s.gens, g.n)
	switch s.m.State() {
	case fsm.Lost:
		if g == s.lostGen {
			s.onReleased(g)
		}
	case fsm.Connecting:
		if c := s.cur; c.deferred && !c.ending && !s.barrierPending(c) {
			s.startAttempt(c)
		}
	case fsm.Draining:
		s.checkDrained()
	}
}

// onReleased: the lost generation is closed; retry, give up, or wait for
// a manual reconnect.
func (s *Supervisor) onReleased(g *generation) {
	facts := fsm.Facts{ReconnectDisabled: !s.opts.policy.Enabled, BudgetSpent: !s.budget.Left()}
	t, ok := s.fire(fsm.Released, facts)
	if !ok {
		return
	}
	switch {
	case t.To == fsm.BackingOff:
		attempt, _ := s.budget.Next()
		delay := s.opts.policy.JitteredDelay(attempt, s.opts.Rand.Float64())
		s.retrySeq++
		seq := s.retrySeq
		s.retryTimer = s.opts.Clock.AfterFunc(delay, func() {
			s.send(message{kind: mRetryDue, seq: seq})
		})
		s.nextRetry = s.opts.Clock.Now().Add(delay)
		s.log(slog.LevelWarn, "reconnecting", g,
			slog.Int("attempt", attempt), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
			slog.Duration("delay", delay))
	case t.Guard.Name == fsm.BudgetSpent.Name:
		s.unregister()
		s.log(slog.LevelError, "gave up", g,
			slog.Int("attempt", s.budget.Attempt()), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
			slog.Any("err", s.lastErr))
	default:
		s.log(slog.LevelError, "reconnect disabled", g, slog.Any("err", s.lastErr))
	}
	s.emit(t, g, s.lastErr)
}

// onTermWindow: g's barrier did not complete in time. In lost, fail
// closed: never start another process while this one may live.
func (s *Supervisor) onTermWindow(n uint64) {
	g := s.gens[n]
	if g == nil || g.barrierDone {
		s.drop()
		return
	}
	if s.m.State() != fsm.Lost || g != s.lostGen {
		return // draining has its own deadline; connecting waits deferred
	}
	t, ok := s.fire(fsm.Stuck, fsm.Facts{})
	if !ok {
		return
	}
	s.lastErr = fmt.Errorf("gen %d: %w (%s)", g.n, ErrStuck, s.opts.TerminationWindow)
	s.unregister()
	s.log(slog.LevelError, "gave up", g,
		slog.Int("attempt", s.budget.Attempt()), slog.Int("max_attempts", s.opts.policy.MaxAttempts),
		slog.Any("err", s.lastErr))
	s.emit(t, g, s.lastErr)
}

func (s *Supervisor) onRetryDue() {
	t, ok := s.fire(fsm.RetryDue, fsm.Facts{})
	if !ok {
		return
	}
	s.retryTimer = nil
	g := s.enterConnecting()
	s.emit(t, g, nil)
}

func (s *Supervisor) onToolsChanged(n uint64) {
	g := s.gens[n]
	stale := g == nil || g != s.cur || g.ending
	t, ok := s.fire(fsm.ToolsChanged, fsm.Facts{Stale: stale})
	if !ok {
		return
	}
	switch s.m.State() {
	case fsm.Connecting:
		g.syncDirty = true
	case fsm.Established:
		s.requestSync(g)
	}
	s.emit(t, g, nil)
}

// requestSync runs one tools sync for g, or marks the running one dirty so
// exactly one more follows: a storm of notifications gives O(1) syncs.
func (s *Supervisor) requestSync(g *generation) {
	if s.syncing != nil {
		s.syncDirty = true
		return
	}
	s.syncing = g
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defs, err := s.listTools(g.ctx, g.cs)
		s.send(message{kind: mSyncDone, gen: g.n, defs: defs, err: err})
	}()
}

func (s *Supervisor) onSyncDone(m message) {
	g := s.syncing
	s.syncing = nil
	if s.m.State() == fsm.Draining {
		s.checkDrained()
		return
	}
	if g == nil || g.n != m.gen || g != s.cur || g.ending || s.m.State() != fsm.Established {
		s.drop()
		return
	}
	if m.err != nil {
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", m.err))
	} else if err := s.opts.Sink.Replace(s.opts.Name, g.n, m.defs); err != nil {
		// The sink left the previous registrations intact (R20).
		s.log(slog.LevelWarn, "tools sync failed", g, slog.Any("err", err))
	} else {
		s.toolCount = len(m.defs)
	}
	if s.syncDirty {
		s.syncDirty = false
		s.requestSync(g)
	}
}

func (s *Supervisor) onReconnect() error {
	from := s.m.State()
	t, err := s.m.Fire(fsm.Reconnect, fsm.Facts{})
	if err != nil {
		return fmt.Errorf("mcpkeep: server %q: reconnect: %w", s.opts.Name, err)
	}
	switch from {
	case fsm.Established:
		// An operator's restart is not a failure: the budget starts over.
		g := s.cur
		s.budget.Reset()
		s.lastErr = errManualReconnect
		s.endGen(g)
		s.lostGen = g
		s.emit(t, g, errManualReconnect)
		s.checkBarrier(g)
	case fsm.BackingOff:
		stopTimer(&s.retryTimer)
		s.emit(t, s.enterConnecting(), nil)
	case fsm.Exhausted:
		s.budget.Reset()
		s.emit(t, s.enterConnecting(), nil)
	}
	return nil
}

func (s *Supervisor) onDispose() {
	t, ok := s.fire(fsm.Dispose, fsm.Facts{})
	if !ok {
		return // already draining or disposed
	}
	stopTimer(&s.retryTimer)
	s.nextRetry = time.Time{}
	if s.cur != nil {
		s.endGen(s.cur)
	}
	s.drainTimer = s.opts.Clock.AfterFunc(s.opts.TerminationWindow, func() {
		s.send(message{kind: mDrainTimeout})
	})
	s.emit(t, s.cur, nil)
	s.activationDone(ErrDisposed)
	if s.cur != nil {
		s.checkBarrier(s.cur) // a deferred attempt has nothing to wait for
	}
	s.checkDrained()
}

// checkDrained finishes the drain once the attempt, the sync and every
// barrier have settled.
func (s *Supervisor) checkDrained() {
	if s.m.State() != fsm.Draining || s.syncing != nil {
		return
	}
	for _, g := range s.gens {
		if !g.barrierDone {
			return
		}
	}
	t, ok := s.fire(fsm.Drained, fsm.Facts{})
	if !ok {
		return
	}
	s.finish(t, nil)
}

func (s *Supervisor) onDrainTimeout() {
	if s.m.State() != fsm.Draining {
		s.drop()
		return
	}
	t, ok := s.fire(fsm.DrainTimeout, fsm.Facts{})
	if !ok {
		return
	}
	var pending []uint64
	for n, g := range s.gens {
		if !g.barrierDone {
			pending = append(pending, n)
		}
	}
	err := fmt.Errorf("%w: generations %v still closing after %s", ErrIncompleteShutdown, pending, s.opts.TerminationWindow)
	s.log(slog.LevelError, "incomplete shutdown", s.cur, slog.Any("err", err))
	s.finish(t, err)
}

func (s *Supervisor) finish(t fsm.Transition, err error) {
	stopTimer(&s.drainTimer)
	stopTimer(&s.retryTimer)
	for _, g := range s.gens {
		stopTimer(&g.termTimer)
		stopTimer(&g.stableTimer)
		stopTimer(&g.connectTimer)
	}
	s.opts.Sink.Release(s.opts.Name)
	s.toolCount = 0
	s.finished = true
	s.mu.Lock()
	s.disposeErr = err
	s.mu.Unlock()
	s.emit(t, s.cur, err)
}

// unregister removes the server's tools (exhausted by budget, stuck).
func (s *Supervisor) unregister() {
	s.opts.Sink.Remove(s.opts.Name)
	s.toolCount = 0
}

func (s *Supervisor) activationDone(err error) {
	if s.activated {
		return
	}
	s.activated = true
	s.activation <- err
}

// emit tells observers about t.
func (s *Supervisor) emit(t fsm.Transition, g *generation, err error) {
	var n uint64
	if g != nil {
		n = g.n
	}
	s.obs.notify(Transition{
		Server: s.opts.Name, Gen: n, From: t.From, To: t.To, Event: t.Event, Guard: t.Guard.Name,
		Attempt: s.budget.Attempt(), NextRetry: s.nextRetry, Err: err, At: s.opts.Clock.Now(),
	})
}

// publish refreshes the snapshot and wakes its waiters when it changed.
func (s *Supervisor) publish() {
	var n uint64
	if s.cur != nil {
		n = s.cur.n
	}
	snap := Snapshot{
		Server: s.opts.Name, State: s.m.State(), Gen: n,
		Attempt: s.budget.Attempt(), MaxAttempts: s.opts.policy.MaxAttempts,
		NextRetry: s.nextRetry, LastErr: s.lastErr, Tools: s.toolCount, Started: true,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameSnapshot(snap, s.snap) {
		return
	}
	s.snap = snap
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Supervisor) log(level slog.Level, msg string, g *generation, attrs ...slog.Attr) {
	var n uint64
	if g != nil {
		n = g.n
	}
	all := append([]slog.Attr{slog.String("server", s.opts.Name), slog.Uint64("gen", n)}, attrs...)
	s.opts.Logger.LogAttrs(context.Background(), level, msg, all...)
}

// sameSnapshot compares field by field; errors by identity, guarding
// against error values of uncomparable dynamic types.
func sameSnapshot(a, b Snapshot) (same bool) {
	ea, eb := a.LastErr, b.LastErr
	a.LastErr, b.LastErr = nil, nil
	if a != b {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return ea == eb
}

func stopTimer(t **clock.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}
