package proxy

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What each host session set up (its log level, its subscriptions, its
// roots) is kept per session, and what the servers get is derived from
// all of them: the most verbose level, the union of subscriptions. When a
// session ends (DELETE, idle timeout, transport error, stdin EOF) its part
// is dropped and the rest recomputed (docs/design.md §19).

// subscription is one URI's subscribers. Its turn is held across the
// servers' subscribe and unsubscribe, so the first subscriber's
// subscription is made before a second is counted, and a failed one
// removes nobody else's; another URI is not held up. The turn is not a
// mutex: it is waited for with the request's context, and it may be held
// when Server.mu is taken, never the other way round (docs/design.md §19,
// "Lock order").
type subscription struct {
	turn     chan struct{}               // one subscribe or leave of this URI at a time
	sessions map[*mcp.ServerSession]bool // under turn
	refs     int                         // holders of this entry (under Server.mu)
}

// take waits for st's turn, or for ctx to end.
func (st *subscription) take(ctx context.Context) error {
	select {
	case st.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (st *subscription) give() { <-st.turn }

// sub returns uri's entry, counted as held; release it with unsub.
func (s *Server) sub(uri string) *subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.subs[uri]
	if st == nil {
		st = &subscription{turn: make(chan struct{}, 1), sessions: map[*mcp.ServerSession]bool{}}
		s.mu.subs[uri] = st
	}
	st.refs++
	return st
}

// unsub releases uri's entry, forgetting it when nobody holds it or is
// subscribed through it.
func (s *Server) unsub(uri string, st *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.refs--
	if st.refs == 0 && len(s.mu.subscribed[uri]) == 0 && s.mu.subs[uri] == st {
		delete(s.mu.subs, uri)
	}
}

// member records (in) or drops ss as a subscriber of uri in the index
// forget reads, Server.mu's copy of every subscription's sessions. Called
// with uri's turn held.
func (s *Server) member(uri string, ss *mcp.ServerSession, in bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mu.subscribed[uri]
	switch {
	case in && m == nil:
		s.mu.subscribed[uri] = map[*mcp.ServerSession]bool{ss: true}
	case in:
		m[ss] = true
	default:
		delete(m, ss)
		if len(m) == 0 {
			delete(s.mu.subscribed, uri)
		}
	}
}

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	s.watch(req.Session)
	uri := req.Params.URI
	st := s.sub(uri)
	defer s.unsub(uri, st)
	if err := st.take(ctx); err != nil {
		return err
	}
	defer st.give()
	if len(st.sessions) == 0 {
		ctx, done := s.track(ctx)
		defer done()
		if err := s.getPool().SubscribeResource(ctx, uri); err != nil {
			if errors.Is(err, mcpkeep.ErrUnknownResource) {
				return mcp.ResourceNotFoundError(uri)
			}
			return s.cat.wireError(err)
		}
	}
	st.sessions[req.Session] = true
	s.member(uri, req.Session, true)
	return nil
}

// unsubscribe ends the servers' subscription when the last host session
// that asked for it leaves it.
func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return s.leave(ctx, req.Params.URI, req.Session)
}

func (s *Server) leave(ctx context.Context, uri string, ss *mcp.ServerSession) error {
	st := s.sub(uri)
	defer s.unsub(uri, st)
	if err := st.take(ctx); err != nil {
		return err
	}
	defer st.give()
	if !st.sessions[ss] {
		return nil
	}
	delete(st.sessions, ss)
	s.member(uri, ss, false)
	if len(st.sessions) > 0 {
		return nil
	}
	return s.getPool().UnsubscribeResource(ctx, uri)
}

// setLevel records a session's level and gives the servers the most
// verbose one any session asked for (each session's own level still
// filters what it receives).
func (s *Server) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	s.watch(ss)
	s.mu.Lock()
	s.mu.levels[ss] = level
	most := s.mostVerboseLocked()
	s.mu.Unlock()
	_ = s.getPool().SetLoggingLevel(ctx, most)
}

func (s *Server) mostVerboseLocked() mcp.LoggingLevel {
	most := mcp.LoggingLevel("")
	for _, l := range s.mu.levels {
		if most == "" || levelRank(l) < levelRank(most) {
			most = l
		}
	}
	return most
}

// watch notes a host session once, and forgets what it set up when it
// ends.
func (s *Server) watch(ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	s.mu.Lock()
	seen := s.mu.sessions[ss]
	s.mu.sessions[ss] = true
	if seen || !s.goLocked() {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	go func() {
		defer s.sessionsWG.Done()
		_ = ss.Wait()
		s.forget(ss)
	}()
}

// goLocked counts a session goroutine in, unless Shutdown already waits
// for them (a WaitGroup must not grow from zero while waited on).
// Server.mu is held.
func (s *Server) goLocked() bool {
	if s.mu.closing {
		return false
	}
	s.sessionsWG.Add(1)
	return true
}

// forget drops a session that ended: its level (the servers fall back to
// the most verbose level still asked for), its subscriptions (a URI whose
// last subscriber left is unsubscribed), its roots work and its outbox.
func (s *Server) forget(ss *mcp.ServerSession) {
	s.mu.Lock()
	delete(s.mu.sessions, ss)
	_, hadLevel := s.mu.levels[ss]
	delete(s.mu.levels, ss)
	most := s.mostVerboseLocked()
	// The index, not the subscriptions themselves: their turns may be
	// held across a server's subscribe, and none is waited for here
	// under Server.mu (the lock order, docs/design.md §19).
	var uris []string
	for uri, m := range s.mu.subscribed {
		if m[ss] {
			uris = append(uris, uri)
		}
	}
	delete(s.mu.roots, ss)
	s.mu.Unlock()
	s.host.outboxes.drop(ss)
	pool, ok := s.Pool()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, forgetBound)
	defer cancel()
	if hadLevel && most != "" {
		_ = pool.SetLoggingLevel(ctx, most)
	}
	for _, uri := range uris {
		if err := s.leave(ctx, uri, ss); err != nil {
			s.log.Debug("unsubscribe of a session that ended", slog.String("uri", uri), slog.Any("err", err))
		}
	}
}

// forgetBound bounds the servers' updates after a session ended.
const forgetBound = 10 * time.Second

// refreshRoots asks a legacy host for its roots and gives them to every
// server: at its initialized and at each roots/list_changed. One refresh
// runs per session at a time, and a change during it is fetched once more
// afterwards, so the answers are applied in order and a storm of
// notifications costs O(1) fetches.
func (s *Server) refreshRoots(ss *mcp.ServerSession) {
	if ss == nil || isModern(ss) {
		return
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || (p.Capabilities.RootsV2 == nil && !p.Capabilities.Roots.ListChanged) {
		return
	}
	s.watch(ss)
	s.mu.Lock()
	r := s.mu.roots[ss]
	if r == nil {
		r = &rootsState{}
		s.mu.roots[ss] = r
	}
	if r.running {
		r.dirty = true
		s.mu.Unlock()
		return
	}
	if !s.goLocked() {
		s.mu.Unlock()
		return
	}
	r.running = true
	s.mu.Unlock()
	go func() { // never call the host from its own notification handler
		defer s.sessionsWG.Done()
		for {
			s.fetchRoots(ss)
			s.mu.Lock()
			if !r.dirty || s.ctx.Err() != nil {
				r.running = false
				s.mu.Unlock()
				return
			}
			r.dirty = false
			s.mu.Unlock()
		}
	}()
}

// rootsState is one session's roots refresh (under Server.mu).
type rootsState struct{ running, dirty bool }

func (s *Server) fetchRoots(ss *mcp.ServerSession) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		s.log.Warn("roots/list failed", slog.Any("err", err))
		return
	}
	select {
	case <-s.started:
	case <-ctx.Done():
		return
	}
	_ = s.getPool().SetRoots(ctx, res.Roots)
}
