package mcpkeep

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The goroutines of a generation. Each reports to the loop by message,
// tagged with the generation, and never touches the lifecycle.

// attempt runs on its own goroutine: open, handshake, the initial sync of
// every list, and the sticky session state (subscriptions, log level),
// all inside the connect timeout. When the loop has ended before it could
// take what the attempt opened (a drain that timed out), the attempt ends
// it itself (R26).
func (s *Supervisor) attempt(g *generation) {
	defer s.wg.Done()
	tg, err := s.opts.Opener.Open(g.ctx, g.n)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, err: fmt.Errorf("open: %w", err)})
		return
	}
	if b, ok := tg.(transport.WriteBounder); ok {
		// A server that takes nothing of a write for this long is hung
		// (docs/design.md §19).
		b.BoundWrites(s.opts.ConnectTimeout)
	}
	if !s.handoff(message{kind: mOpened, gen: g.n, tg: tg}) {
		abort(tg)
		<-tg.Gone() // the name's quarantine waits for this attempt
		return
	}

	roots, haveRoots := s.stickyRoots()
	g.client = s.newClient(g, roots, haveRoots)
	g.applied.roots = roots
	var sopts *mcp.ClientSessionOptions
	if so, ok := s.opts.Opener.(transport.SessionOptioner); ok {
		sopts = so.SessionOptions()
	}
	// The handshake and the initial listing run on contexts that end with
	// them, not the generation's: the SDK's Streamable HTTP client reads
	// an answered event stream to its end on its request's context, and
	// a server may keep it open for good (docs/design.md §8). Connect's
	// context bounds the handshake only; the session does not keep it.
	hctx, hcancel := context.WithCancel(g.ctx)
	cs, err := g.client.Connect(hctx, peerTransport{tg.Transport(), g}, sopts)
	hcancel()
	if err != nil {
		// A handshake refused for want of a sign-in surfaces as a closed
		// connection; a strict Start returns the cause.
		s.send(message{kind: mAttempt, gen: g.n, err: signInCause(tg, fmt.Errorf("handshake: %w", err))})
		return
	}
	g.modern = modern(cs)
	m := message{kind: mAttempt, gen: g.n, cs: cs}
	switch {
	case g.listLater:
		// The request that started the server waits for this attempt:
		// it goes out now, the lists follow (docs/design.md §20).
		m.kinds = offered(cs)
		s.reconcile(g.ctx, g, cs, "")
	default:
		lctx, lcancel := context.WithCancel(g.ctx)
		m.lists, err = s.list(lctx, cs, offered(cs), true)
		lcancel()
		if err != nil {
			m.err = fmt.Errorf("initial %w", err)
			break
		}
		// A kind the server no longer offers is an empty list: the
		// previous generation's registrations of it must go.
		m.lists.kinds = kindTools | kindPrompts | kindResources
		s.reconcile(g.ctx, g, cs, "")
	}
	if !s.handoff(m) {
		// Nobody will close this session or end the transport.
		_ = cs.Close()
		abort(tg)
		<-tg.Gone()
	}
}

// syncLists is one re-sync of an established generation: the kinds in k.
// The connect timeout bounds it as it bounds the initial listing (on the
// supervisor's clock): a server that never answers a re-sync must not
// stall its later syncs (docs/design.md §19).
func (s *Supervisor) syncLists(g *generation, k listKinds) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancelCause(g.ctx)
	defer cancel(nil)
	timeout := fmt.Errorf("mcpkeep: server %q gen %d: sync took longer than the connect timeout (%s): %w",
		s.opts.Name, g.n, s.opts.ConnectTimeout, ErrConnectTimeout)
	t := s.opts.Clock.AfterFunc(s.opts.ConnectTimeout, func() { cancel(timeout) })
	l, err := s.list(ctx, g.cs, k, false)
	t.Stop()
	if err != nil && g.ctx.Err() == nil && errors.Is(context.Cause(ctx), ErrConnectTimeout) {
		err = fmt.Errorf("%w (%w)", timeout, err)
	}
	if h := s.testHooks; h != nil && h.syncDone != nil {
		h.syncDone(g.n)
	}
	s.send(message{kind: mSyncDone, gen: g.n, kinds: k, lists: l, err: err})
}

// watchSession reports the end of an established generation's session.
func (s *Supervisor) watchSession(g *generation) {
	defer s.wg.Done()
	err := g.cs.Wait()
	if err == nil {
		// A clean end of the stream says nothing; the transport may know
		// why (the child's exit status, the HTTP failure).
		err = errSessionEnded
		if st := g.tg.Exit().Status; st != "" {
			err = fmt.Errorf("%w: %s", errSessionEnded, st)
		}
	}
	s.send(message{kind: mSessionEnded, gen: g.n, err: err})
}

// watchGone reports the transport's close signal, or gives up when the
// supervisor finishes (a drain that timed out must not leak watchers).
func (s *Supervisor) watchGone(g *generation) {
	defer s.wg.Done()
	select {
	case <-g.tg.Gone():
		s.send(message{kind: mGone, gen: g.n})
	case <-s.stop:
	}
}

// closeSession runs ClientSession.Close, which waits for in-flight calls;
// the generation's context was cancelled first, so it stays bounded.
func (s *Supervisor) closeSession(g *generation) {
	defer s.wg.Done()
	_ = g.cs.Close()
	s.send(message{kind: mCloseReturned, gen: g.n})
}

// testHooks are the race table's seams into goroutines the loop does not
// own; every field is optional.
type testHooks struct {
	// startWait runs in Start after the loop started, before Start waits
	// for the activation (R23).
	startWait func()
	// syncDone runs in a sync goroutine before it reports (R21).
	syncDone func(gen uint64)
	// idleStop runs on the loop once an idle stop was decided, before
	// the generation ends: a request that starts there races the stop
	// (R49).
	idleStop func()
	// idleClosed runs on the loop after an idle stop closed the
	// generation to new requests, before its guard reads them (R53).
	idleClosed func()
	// activated runs on the loop just before it reports the activation
	// outcome to Start.
	activated func()
}
