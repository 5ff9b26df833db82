package oauth

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// TokenStatus is what `mcpkeep auth status` shows of one server: never a
// token.
type TokenStatus struct {
	Server   string
	URL      string
	SignedIn bool
	// Expiry is the access token's (zero: none given); Refreshable says a
	// refresh token is kept, so an expired token renews itself.
	Expiry      time.Time
	Refreshable bool
	// SignedInAt is when the person signed in.
	SignedInAt time.Time
	// Login is the command that signs in.
	Login string
}

func statusOf(t Target, e *Entry) TokenStatus {
	st := TokenStatus{Server: t.Server, URL: t.URL, Login: t.LoginCommand()}
	if e != nil {
		st.SignedIn, st.Expiry, st.Refreshable, st.SignedInAt = true, e.Expiry, e.RefreshToken != "", e.SignedIn
	}
	return st
}

func (st TokenStatus) expiresPhrase(now time.Time) string {
	switch {
	case st.Expiry.IsZero():
		return ""
	case st.Expiry.After(now):
		return fmt.Sprintf(" The token expires at %s (in %s).", st.Expiry.UTC().Format(time.RFC3339), st.Expiry.Sub(now).Round(time.Second))
	default:
		return fmt.Sprintf(" The token expired at %s.", st.Expiry.UTC().Format(time.RFC3339))
	}
}

// Status reports each target's sign-in.
func Status(s *Store, targets []Target) ([]TokenStatus, error) {
	out := make([]TokenStatus, 0, len(targets))
	for _, t := range targets {
		e, err := s.Load(t.URL, t.Client.ID)
		if err != nil && !errors.Is(err, ErrNotSignedIn) {
			return nil, err
		}
		out = append(out, statusOf(t, e))
	}
	return out, nil
}

// WriteStatus prints sts, one server a line:
//
//	NAME  URL  signed in; token expires 2026-09-04T12:00:00Z (in 59m0s); refreshable
//	NAME  URL  not signed in: run: mcpkeep auth login NAME
func WriteStatus(w io.Writer, sts []TokenStatus, now time.Time) error {
	for _, st := range sts {
		name := st.Server
		if name == "" {
			name = "-"
		}
		var what string
		switch {
		case !st.SignedIn:
			what = "not signed in: run: " + st.Login
		case st.Expiry.IsZero():
			what = "signed in; the token has no expiry"
		case st.Expiry.After(now):
			what = fmt.Sprintf("signed in; token expires %s (in %s)", st.Expiry.UTC().Format(time.RFC3339), st.Expiry.Sub(now).Round(time.Second))
		case st.Refreshable:
			what = fmt.Sprintf("signed in; token expired %s, refreshed at the next connect", st.Expiry.UTC().Format(time.RFC3339))
		default:
			what = fmt.Sprintf("token expired %s and cannot be refreshed: run: %s", st.Expiry.UTC().Format(time.RFC3339), st.Login)
		}
		if st.SignedIn && st.Refreshable && st.Expiry.After(now) {
			what += "; refreshable"
		}
		if _, err := fmt.Fprintf(w, "%s\t%s\t%s\n", name, transport.RedactURL(st.URL), what); err != nil {
			return err
		}
	}
	return nil
}

// Logout forgets t's token. ErrNotSignedIn when there was none.
func Logout(s *Store, t Target) error {
	if _, err := s.Load(t.URL, t.Client.ID); err != nil {
		return err
	}
	return s.Delete(t.URL, t.Client.ID)
}
