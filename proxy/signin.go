package proxy

import (
	"errors"
	"log/slog"

	"github.com/mcpkeep/mcpkeep"
)

// SignedIn reconnects the servers at url (with clientID) that stopped for
// want of a sign-in (mcpkeep.ErrSignInRequired): a token arrived, for
// example from `mcpkeep auth login` (see oauth.Watch).
func (s *Server) SignedIn(url, clientID string) {
	pool, ok := s.Pool()
	if !ok {
		return
	}
	for _, st := range pool.States() {
		sc, ok := pool.Server(st.Server)
		if !ok || sc.URL != url || sc.OAuth == nil || sc.OAuth.ClientID != clientID ||
			!errors.Is(st.LastErr, mcpkeep.ErrSignInRequired) {
			continue
		}
		if sup, ok := pool.Supervisor(st.Server); ok && sup.Reconnect() == nil {
			s.log.Info("signed in: reconnecting", slog.String("server", st.Server))
		}
	}
}

// NeedsSignIn reports whether any server of the current config signs in
// with OAuth (then a caller may watch the token store, see SignedIn).
func (s *Server) NeedsSignIn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range s.mu.cfg.Servers {
		if sc.OAuth != nil {
			return true
		}
	}
	return false
}
