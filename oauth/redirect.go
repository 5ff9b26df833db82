package oauth

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpkeep/mcpkeep/transport"
)

// ErrTokenRedirect: the token endpoint redirected a refresh to another
// origin, or from https to http. The request carries the refresh token
// and the client's secret (a 307 or 308 sends the body again), so it is
// not followed (docs/design.md §22).
var ErrTokenRedirect = errors.New("the token endpoint redirected to another origin")

// tokenClient is c (or a client with tokenTimeout) that follows a
// redirect only within the origin of the request it started from, and
// never from https to http; c's own CheckRedirect still applies.
func tokenClient(c *http.Client) *http.Client {
	out := &http.Client{Timeout: tokenTimeout}
	if c != nil {
		cp := *c
		out = &cp
	}
	own := out.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkTokenRedirect(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return out
}

// checkTokenRedirect refuses req, a redirect of via[0], unless it keeps
// via[0]'s scheme and host (the origin: an http endpoint may go to https
// on its host, never the other way).
func checkTokenRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	to := req.URL
	sameHost := to.Host == first.Host
	switch {
	case sameHost && to.Scheme == first.Scheme:
		return nil
	case sameHost && first.Scheme == "http" && to.Scheme == "https":
		return nil
	}
	return fmt.Errorf("%w: %s to %s", ErrTokenRedirect, transport.RedactURL(first.String()), transport.RedactURL(to.String()))
}
