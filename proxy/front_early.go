package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve's host session is connected after the first apply
// (docs/design.md §20, "The host's session after the first apply").
// go-sdk v1.8.0 schedules no list_changed for a change of its lists made
// while it has no session (Server.changeAndNotify), and a session that
// connects later reads the lists as they are. So Serve reads the host's
// first message itself; when it is an initialize (or a 2026-07-28
// server/discover) it starts the servers with the capabilities it
// declares and waits for the first apply (bounded by the init wait, as settle was) while the SDK's server
// has no session; the host's bytes wait meanwhile. Then it connects the
// session with the initialize read first, and settle answers it at once:
// nothing changed since the session connected, so no list_changed is
// pending for it. A change after the connect still gets settle's wait.

// hostMark is what settle knows of the session a request came on: the
// lists' change stamp when it connected, and the instant the init wait
// ends when Serve already counted it.
type hostMark struct {
	stamp    int64
	deadline time.Time
}

type hostMarkKey struct{}

// markOf returns the request's session mark; the SDK's request contexts
// carry the values of the context given to Connect (go-sdk v1.8.0's
// jsonrpc2 derives them from it).
func markOf(ctx context.Context) (hostMark, bool) {
	m, ok := ctx.Value(hostMarkKey{}).(hostMark)
	return m, ok
}

// initDeadline is when the init wait ends: InitWait from InitWaitFrom, or
// from now.
func (s *Server) initDeadline() time.Time {
	wait := cmp.Or(s.opts.InitWait, DefaultInitWait)
	if from := s.opts.InitWaitFrom; !from.IsZero() {
		return from.Add(wait)
	}
	return time.Now().Add(wait)
}

// startEarly starts the servers for first, the host's first message,
// when it declares the host's capabilities (firstCapabilities) and
// nothing started them yet, and waits for the first apply and its
// delivery, until the init wait ends or ctx (or Shutdown) does. It
// returns the wait's end when it counted it.
func (s *Server) startEarly(ctx context.Context, first jsonrpc.Message) (deadline time.Time, counted bool) {
	caps, version, ok := firstCapabilities(first)
	if !ok {
		return time.Time{}, false // startFor, at the SDK's first request
	}
	s.once.Do(func() {
		counted = true
		s.launch(caps, version, s.listed)
	})
	if !counted {
		return time.Time{}, false // Start: the servers run already
	}
	deadline = s.initDeadline()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	// woken reports whether ch closed before the wait ended.
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-t.C:
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
		return false
	}
	if !woken(s.applied) {
		return deadline, true
	}
	// The mirrors may still be delivering what the apply registered
	// (front_mirrors.go).
	s.mu.Lock()
	catalog, names := s.mu.catalog, serverNames(s.mu.cfg)
	s.mu.Unlock()
	for {
		done, next := s.mirrors.caughtUp(s.set, catalog, names)
		if done || !woken(next) {
			return deadline, true
		}
	}
}

// firstCapabilities reads the host's capabilities and protocol version
// from a first message that declares them as startFor reads them: a
// legacy initialize's params, or a 2026-07-28 server/discover's _meta
// (read by the SDK's own request type). Any other first message leaves
// the start to startFor.
func firstCapabilities(m jsonrpc.Message) (caps *mcp.ClientCapabilities, version string, ok bool) {
	req, isReq := m.(*jsonrpc.Request)
	if !isReq || !req.IsCall() {
		return nil, "", false
	}
	switch req.Method {
	case "initialize":
		var p mcp.InitializeParams
		if json.Unmarshal(req.Params, &p) != nil {
			return nil, "", false // the SDK answers it with the error
		}
		return p.Capabilities, p.ProtocolVersion, true
	case "server/discover":
		var p mcp.DiscoverParams
		if len(req.Params) > 0 && json.Unmarshal(req.Params, &p) != nil {
			return nil, "", false
		}
		r := &mcp.ServerRequest[*mcp.DiscoverParams]{Params: &p}
		if r.ProtocolVersion() != modernVersion {
			return nil, "", false // the SDK refuses it, the host tries again
		}
		return r.ClientCapabilities(), r.ProtocolVersion(), true
	}
	return nil, "", false
}

// markSession returns ctx carrying the session's mark, read right before
// the SDK's Connect: a change stamped after this may have scheduled a
// list_changed for the session (the stamp is stored after the SDK's
// change, so a change that raced the connect counts as after it). With
// another session connected, a change before may have scheduled one too
// (the SDK's timer notifies the sessions of when it fires): no mark.
func (s *Server) markSession(ctx context.Context, deadline time.Time) context.Context {
	for range s.srv.Sessions() {
		return ctx
	}
	return context.WithValue(ctx, hostMarkKey{}, hostMark{stamp: s.up.changed.Load(), deadline: deadline})
}

// connected hands the SDK a connection Serve opened already.
type connected struct{ conn mcp.Connection }

func (t connected) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
