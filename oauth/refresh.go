package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"golang.org/x/oauth2"
)

// refresh renews the token, after stale (the access token that is about
// to expire, or that the server rejected), for every process sharing the
// store at once (docs/design.md §22). It holds the entry's file lock
// from reading the entry to writing what the token endpoint returned, so
// two processes never spend one rotating refresh token twice:
//
//   - the entry is read again under the lock: when another process (or a
//     sign-in) stored a token other than stale meanwhile, that one is used
//     and nothing is sent (rejected: any newer token is retried; expiring:
//     a newer one that is fresh);
//   - a refresh refused with invalid_grant reads the store once more (a
//     writer that does not take the lock, such as an older mcpkeep, may
//     have rotated it), and only when it still holds the refused token is
//     it forgotten and a person asked for;
//   - any other refusal (invalid_client, a 401 of a misconfigured or
//     briefly broken endpoint) keeps the token: it is an ordinary failure
//     that a retry may cure;
//   - the result is written compare-and-swap: only over the entry it was
//     refreshed from.
//
// Called with h.mu held; the lock is held across one request to the token
// endpoint, bounded by the handler's client.
func (h *Handler) refresh(stale string, rejected bool) error {
	s, t := h.o.Store, h.o.Target
	var out error
	err := s.withLock(t.URL, t.Client.ID, func() error {
		cur, err := s.Load(t.URL, t.Client.ID)
		if errors.Is(err, ErrNotSignedIn) {
			h.entry, h.mod = nil, time.Time{}
			out = h.signIn("not signed in")
			return nil
		}
		if err != nil {
			return err
		}
		// At most two refreshes: the second with a token another process
		// stored while the first was refused.
		for range 2 {
			if cur.AccessToken != stale && (rejected || h.fresh(cur)) {
				h.adoptStored(cur)
				return nil
			}
			if cur.RefreshToken == "" {
				_ = s.deleteIf(t.URL, t.Client.ID, cur.AccessToken)
				h.entry, h.mod = nil, time.Time{}
				reason := "the token expired, and there is no refresh token"
				if rejected {
					reason = "the server rejected the token, and there is no refresh token"
				}
				out = h.signIn(reason)
				return nil
			}
			tok, err := h.exchange(cur)
			if err == nil {
				next := *cur
				next.setToken(tok)
				switch err := s.swap(cur, &next); {
				case errors.Is(err, ErrEntryChanged):
					// A writer that does not lock stored something newer:
					// it wins (ours is valid too, and unneeded).
					return h.sync(true)
				case err != nil:
					return err
				}
				h.adoptStored(&next)
				return nil
			}
			if !invalidGrant(err) {
				out = h.refreshError(err)
				return nil
			}
			again, lerr := s.Load(t.URL, t.Client.ID)
			if lerr == nil && again.RefreshToken != cur.RefreshToken {
				stale, cur = cur.AccessToken, again // rotated meanwhile: use it
				continue
			}
			_ = s.deleteIf(t.URL, t.Client.ID, cur.RefreshToken)
			h.entry, h.mod = nil, time.Time{}
			out = h.signIn("the refresh was refused: invalid_grant")
			return nil
		}
		out = h.signIn("the refresh was refused: invalid_grant, twice")
		return nil
	})
	if err != nil {
		return err
	}
	return out
}

// invalidGrant: the token endpoint refused the refresh token itself
// (RFC 6749 §5.2): only that needs a person.
func invalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

// refreshError is a failed refresh that a retry may cure, without a
// token: the token endpoint unreachable, a 5xx, or a refusal other than
// invalid_grant (a misconfigured client is the operator's to fix, and the
// token stays good for when it is).
func (h *Handler) refreshError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = transport.RedactURL(ue.URL) // the token URL may hold a secret
		}
		return fmt.Errorf("oauth: refreshing the token of %s: %w", h.o.Target.name(), err)
	}
	what := re.ErrorCode
	if what == "" && re.Response != nil {
		what = fmt.Sprintf("HTTP %d", re.Response.StatusCode)
	} else if re.Response != nil {
		what = fmt.Sprintf("%s (HTTP %d)", what, re.Response.StatusCode)
	}
	if re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
		what += "; check the client's id and secret"
	}
	return fmt.Errorf("oauth: refreshing the token of %s: the token endpoint answered %s", h.o.Target.name(), what)
}
