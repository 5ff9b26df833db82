package transport

import (
	"errors"
	"net/url"
	"strings"
)

// redacted replaces each secret part of a URL.
const redacted = "***"

// unparsableURL stands for a URL whose host cannot be told apart.
const unparsableURL = "(unparsable URL)"

// RedactURL returns raw in the form fit for logs, traces, errors and
// status pages (docs/design.md §8): userinfo (user and password) becomes
// "***", every query value becomes "***" with its key kept (a query part
// without "=" is all value), and so do a fragment and an opaque part.
// Scheme, host and path are kept: they say which server is meant.
//
// A URL that does not parse keeps only its scheme and host, when both are
// plainly readable ("https://host/***"), else it is "(unparsable URL)".
// The raw string is never returned.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactUnparsable(raw)
	}
	return redactParsed(u)
}

func redactParsed(u *url.URL) string {
	var b strings.Builder
	if u.Opaque != "" {
		b.WriteString(u.Scheme + ":" + redacted)
	} else {
		s := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, OmitHost: u.OmitHost}).String()
		if u.User != nil {
			prefix := "//"
			if u.Scheme != "" {
				prefix = u.Scheme + "://"
			}
			s = prefix + redacted + "@" + strings.TrimPrefix(s, prefix)
		}
		b.WriteString(s)
	}
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + redactQuery(u.RawQuery))
	}
	if u.Fragment != "" || u.RawFragment != "" {
		b.WriteString("#" + redacted)
	}
	return b.String()
}

// redactQuery keeps each key of a raw query and replaces its value.
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + redacted
		} else {
			parts[i] = redacted
		}
	}
	return strings.Join(parts, "&")
}

// redactUnparsable keeps scheme and host of a URL that url.Parse refuses,
// when they read plainly; the rest (where the fault is, and any secret)
// goes.
func redactUnparsable(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !validScheme(scheme) {
		return unparsableURL
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	// An "@" past the authority may mean userinfo cut short by a "/" of
	// its password: what looks like the host may be part of it.
	if strings.Contains(tail, "@") || !plainHost(authority) {
		return unparsableURL
	}
	return scheme + "://" + authority + "/" + redacted
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// plainHost: a host name or bracketed IP literal, with an optional
// numeric port; nothing that could be half of a password.
func plainHost(h string) bool {
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		name, port = h[1:end], h[end+1:]
		if port != "" && port[0] != ':' {
			return false
		}
		if !strings.ContainsRune(name, ':') || strings.Trim(name, "0123456789abcdefABCDEF:.") != "" {
			return false
		}
	} else if i := strings.IndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i:]
	}
	if name == "" {
		return false
	}
	if port != "" && (len(port) == 1 || strings.Trim(port[1:], "0123456789") != "") {
		return false
	}
	if strings.HasPrefix(h, "[") {
		return true
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// parseProblem says what is wrong with a URL that url.Parse refused,
// without quoting any of it (url.Error quotes the whole URL, an
// EscapeError the bad escape, which may sit inside a password).
func parseProblem(err error) string {
	var ee url.EscapeError
	var he url.InvalidHostError
	switch {
	case errors.As(err, &ee):
		return "invalid %-escape"
	case errors.As(err, &he):
		return "invalid character in host"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if msg := err.Error(); !strings.ContainsAny(msg, "\"'`") {
		return msg
	}
	return "does not parse"
}
