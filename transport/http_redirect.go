package transport

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect: the server's endpoint answered with a redirect that leaves
// its origin (scheme, host and port) or drops from https to plain http.
// The configured headers, the endpoint's credentials and the SDK's bearer
// token are added below net/http's client, which therefore cannot strip
// them on the way to another host as it would its own; so mcpkeep follows
// no such redirect and fails the request (docs/design.md §8). Errors that
// match it are *RedirectError.
var ErrRedirect = errors.New("redirect to another origin refused")

// RedirectError names a refused redirect. Both URLs are redacted
// (RedactURL), so the error can be logged.
type RedirectError struct {
	Method string // the request's HTTP method
	URL    string // the endpoint, redacted
	Status string // the redirect's status line ("307 Temporary Redirect")
	Target string // where it pointed (Location, resolved), redacted
	// Downgrade: the target is plain http and the endpoint https.
	Downgrade bool
}

func (e *RedirectError) Error() string {
	what := "another origin"
	if e.Downgrade {
		what = "plain http"
	}
	return fmt.Sprintf("http: %s %s: %s to %s refused: a redirect to %s would carry the server's credentials there; "+
		"an MCP endpoint that redirects its requests elsewhere is misconfigured, or it is behind a sign-in "+
		"gateway that sends expired or missing credentials to its identity provider (check the token or API key)",
		e.Method, e.URL, e.Status, e.Target, what)
}

// Is makes errors.Is(err, ErrRedirect) hold.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }

// isFollowed reports whether net/http's client follows a response with
// this status (given a Location).
func isFollowed(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// checkRedirect judges resp, the answer to out: nil when it is no
// redirect net/http would follow, or one within the endpoint's origin
// (followed: the request then comes back through RoundTrip, to the same
// origin); else the refusal.
func (t *genRoundTripper) checkRedirect(out *http.Request, resp *http.Response) *RedirectError {
	loc := resp.Header.Get("Location")
	if !isFollowed(resp.StatusCode) || loc == "" {
		return nil
	}
	e := &RedirectError{Method: out.Method, URL: t.g.url, Status: resp.Status, Target: unparsableURL}
	target, err := out.URL.Parse(loc)
	if err != nil {
		return e // net/http would quote the raw Location in its error
	}
	e.Target = redactParsed(target)
	switch {
	case strings.EqualFold(out.URL.Scheme, "https") && !strings.EqualFold(target.Scheme, "https"):
		e.Downgrade = true
		return e
	case !sameOrigin(out.URL, target):
		return e
	}
	return nil
}

// sameOrigin compares scheme, host and port, with the scheme's default
// port made explicit.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// toEndpointOrigin reports whether u is on the endpoint's origin: only
// those requests get the configured headers.
func (t *genRoundTripper) toEndpointOrigin(u *url.URL) bool {
	return t.endpoint != nil && sameOrigin(t.endpoint, u)
}
