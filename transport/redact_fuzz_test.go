package transport_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

// FuzzRedactURL: whatever the input, the output holds no password, user,
// query value or fragment of it.
//
// raw is checked by shape: a URL that parses comes out parsing, with the
// same scheme, host and path, "***" as its only user, every query part
// "***" or "key=***", and a fragment of "***" if any; one that does not
// parse comes out as "(unparsable URL)" or "scheme://host/***".
//
// The parts (user, pass, key, value, frag) are checked by content: put
// into a URL, none of user, pass, value and frag may appear in the output
// unless the rest of the output holds it anyway.
func FuzzRedactURL(f *testing.F) {
	f.Add("https://user:pw@host/p?api_key=SECRET&x=1#frag", "user", "pw", "api_key", "SECRET", "frag")
	f.Add("http://h/%zz?api_key=SECRET", "u", "p%zz", "k", "v=w&z", "")
	f.Add("http://user:pa/ss@host/", "", "pa/ss", "", "a;b", "#")
	f.Add("mailto:a@b?x=y", "ü", "@", "=", "&", "?")
	f.Add("//u:p@h/x?q", "***", "***", "***", "***", "***")
	f.Add("http://[::1]:80/%zz", "user", "1", "k", "", "x")
	f.Fuzz(func(t *testing.T, raw, user, pass, key, value, frag string) {
		out := transport.RedactURL(raw)
		if u, err := url.Parse(raw); err != nil {
			checkUnparsable(t, raw, out)
		} else {
			checkParsed(t, u, out)
		}

		u := &url.URL{Scheme: "https", Host: "host.example", Path: "/mcp",
			User: url.UserPassword(user, pass), RawQuery: url.QueryEscape(key) + "=" + url.QueryEscape(value), Fragment: frag}
		in := u.String()
		out = transport.RedactURL(in)
		skeleton := "https://***@host.example/mcp?" + url.QueryEscape(key) + "=***#***"
		for _, secret := range []string{user, pass, value, frag,
			url.QueryEscape(value), url.PathEscape(pass), url.PathEscape(user)} {
			if len(secret) >= 3 && strings.Contains(out, secret) && !strings.Contains(skeleton, secret) {
				t.Fatalf("RedactURL(%q) = %q holds %q", in, out, secret)
			}
		}
	})
}

func checkParsed(t *testing.T, u *url.URL, out string) {
	t.Helper()
	r, err := url.Parse(out)
	if err != nil {
		t.Fatalf("RedactURL(%q) = %q does not parse: %v", u, out, err)
	}
	if r.Scheme != u.Scheme || (u.Opaque == "" && (r.Host != u.Host || r.Path != u.Path)) {
		t.Fatalf("RedactURL(%q) = %q changed scheme, host or path", u, out)
	}
	if u.Opaque != "" && r.Opaque != "***" {
		t.Fatalf("RedactURL(%q) = %q keeps the opaque part", u, out)
	}
	if r.User != nil && (r.User.Username() != "***" || r.User.String() != "%2A%2A%2A") || (r.User == nil) != (u.User == nil || u.Opaque != "") {
		t.Fatalf("RedactURL(%q) = %q: userinfo %v", u, out, r.User)
	}
	for _, part := range strings.Split(r.RawQuery, "&") {
		if part != "" && part != "***" && !strings.HasSuffix(part, "=***") {
			t.Fatalf("RedactURL(%q) = %q: query part %q", u, out, part)
		}
		if k, _, _ := strings.Cut(part, "="); strings.Contains(k, "***") && k != "***" && !strings.Contains(u.RawQuery, k) {
			t.Fatalf("RedactURL(%q) = %q: key %q is not the input's", u, out, k)
		}
	}
	if r.Fragment != "" && r.Fragment != "***" {
		t.Fatalf("RedactURL(%q) = %q: fragment %q", u, out, r.Fragment)
	}
}

func checkUnparsable(t *testing.T, raw, out string) {
	t.Helper()
	if out == "(unparsable URL)" {
		return
	}
	scheme, rest, ok := strings.Cut(out, "://")
	host, tail, _ := strings.Cut(rest, "/")
	if !ok || tail != "***" || !strings.HasPrefix(raw, scheme+"://") || strings.ContainsAny(host, "@?#%/ ") || host == "" {
		t.Fatalf("RedactURL(%q) = %q, want (unparsable URL) or scheme://host/***", raw, out)
	}
}
