package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// A person's idle stop (docs/design.md §20, §28): the live page's stop
// button asks an established server to stop now as its idle timer would,
// through the same row (established —idle_timeout [quiet]→ lost), the same
// close to new requests before the guard reads what is in flight, and the
// same way back to idle: catalog kept, the host told nothing, the budget
// untouched. Only the window is not waited for: the person asked now.

var (
	// ErrNotIdleable: the server has no idle stop (Options.IdleStop,
	// config idleStopMs, or lazy start): its configuration says it stays
	// up, so it is not stopped for idleness by hand either.
	ErrNotIdleable = errors.New("the server has no idle stop")
	// ErrBusy: a request was in flight or a resource subscription was
	// held when the stop was decided: the stop backed out and the
	// generation serves on.
	ErrBusy = errors.New("requests in flight or a subscription held")
)

// StopIdleError says why StopIdle changed nothing. errors.Is matches Err:
// ErrNotIdleable, ErrBusy, ErrNotConnected (not established: State says
// where it is), ErrNotStarted or ErrDisposed.
type StopIdleError struct {
	Server string
	State  fsm.State
	Gen    uint64
	Err    error
}

func (e *StopIdleError) Error() string {
	return fmt.Sprintf("mcpkeep: server %q: idle stop (state %s, gen %d): %v", e.Server, e.State, e.Gen, e.Err)
}

func (e *StopIdleError) Unwrap() error { return e.Err }

// StopIdle stops an established server for idleness now (docs/design.md
// §20): the generation is closed to new requests, and if then none is in
// flight and no subscription is held it ends through its close barrier
// into idle; the next request starts the next generation. It returns when
// the stop was decided (the barrier may still be pending: the snapshot
// says IdleStopping), or a *StopIdleError. ctx bounds the wait for the
// loop's answer only.
func (s *Supervisor) StopIdle(ctx context.Context) error {
	s.mu.Lock()
	started, snap := s.mu.started, s.mu.snap
	s.mu.Unlock()
	fail := func(err error) error {
		return &StopIdleError{Server: s.opts.Name, State: snap.State, Gen: snap.Gen, Err: err}
	}
	if !started {
		return fail(ErrNotStarted)
	}
	select {
	case <-s.done:
		return fail(ErrDisposed)
	default:
	}
	if s.opts.idleStop <= 0 {
		return fail(ErrNotIdleable)
	}
	// The generation the caller saw established: the loop refuses the
	// stop if another one is current by the time it reads the message.
	g := s.live.Load()
	if g == nil {
		return fail(ErrNotConnected)
	}
	reply := make(chan error, 1)
	if !s.send(message{kind: mStopIdle, gen: g.n, reply: reply}) {
		return fail(ErrDisposed)
	}
	select {
	case err := <-reply:
		return err
	case <-s.done:
		return fail(ErrDisposed)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// onStopIdle decides a requested idle stop of the generation m names, as
// onIdleTimeout decides the timer's: close it to new requests, then fire
// idle_timeout, whose guard (quiet) reads what is in flight; a refusal
// opens it again (the requests that waited at the gate go on to it).
func (lc *lifecycle) onStopIdle(m message) error {
	g := lc.gens[m.gen]
	fail := func(err error) error {
		return &StopIdleError{Server: lc.opts.Name, State: lc.m.State(), Gen: m.gen, Err: err}
	}
	if g == nil || g != lc.cur || lc.m.State() != fsm.Established || g.ending {
		// Not an event of the machine here (as a demand to a serving
		// server): neither fired nor counted as a drop.
		return fail(ErrNotConnected)
	}
	g.closeCalls()
	if h := lc.s.testHooks; h != nil && h.idleClosed != nil {
		h.idleClosed()
	}
	t, ok := lc.fire(fsm.IdleTimeout, m)
	if !ok {
		g.openCalls()
		return fail(ErrBusy)
	}
	lc.stopForIdle(t, g, slog.String("by", "request"))
	return nil
}
