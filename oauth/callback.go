package oauth

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode"
)

// callback is one redirect: from the loopback server or pasted.
type callback struct {
	code, state, iss string
	err              error
}

func parseCallback(q url.Values) (callback, bool) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + printable(e, 64)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + printable(d, 300) + ")"
		}
		return callback{err: errors.New(msg), state: q.Get("state")}, true
	}
	if q.Get("code") == "" {
		return callback{}, false
	}
	return callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}, true
}

// printable is s as it may reach a terminal: what the authorization
// server (or whoever sent the redirect) wrote is not trusted, so control
// characters (escape sequences that would move the cursor, retitle the
// window or hide text) and other unprintable runes become '?', and it is
// cut to max runes.
func printable(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("...")
			break
		}
		if !unicode.IsPrint(r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// callbacks takes the redirect of this sign-in and no other: one whose
// state is the one in the authorization URL (RFC 6749 §10.12). A request
// that anything on the machine can send to the loopback port, or a paste
// of an older sign-in's address, is answered and ignored; the first
// matching one is delivered.
type callbacks struct {
	mu    sync.Mutex
	state string // from the authorization URL
	known bool   // the authorization URL was seen
	got   chan callback
}

func newCallbacks() *callbacks { return &callbacks{got: make(chan callback, 1)} }

// expect takes the state of authURL, the authorization URL about to be
// shown.
func (c *callbacks) expect(authURL string) {
	state := ""
	if u, err := url.Parse(authURL); err == nil {
		state = u.Query().Get("state")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state, c.known = state, true
}

// errWrongState: a redirect that is not this sign-in's.
var errWrongState = errors.New("not the redirect of this sign-in (its state does not match)")

// offer delivers cb when it is this sign-in's redirect.
func (c *callbacks) offer(cb callback) error {
	c.mu.Lock()
	ok := c.known && cb.state == c.state
	c.mu.Unlock()
	if !ok {
		return errWrongState
	}
	select {
	case c.got <- cb:
	default: // one is enough
	}
	return nil
}

func callbackHandler(c *callbacks) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CallbackPath, func(w http.ResponseWriter, r *http.Request) {
		cb, ok := parseCallback(r.URL.Query())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, "<p>mcpkeep: this address has no authorization code.</p>")
			return
		}
		if err := c.offer(cb); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<p>mcpkeep: %s.</p>", html.EscapeString(err.Error()))
			return
		}
		if cb.err != nil {
			fmt.Fprintf(w, "<p>mcpkeep: %s</p>", html.EscapeString(cb.err.Error()))
			return
		}
		fmt.Fprint(w, "<p>mcpkeep: signed in. You can close this tab.</p>")
	})
	return mux
}

// readPasted reads redirected URLs pasted by the person, one a line.
func readPasted(in io.Reader, out io.Writer, c *callbacks) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		u, err := url.Parse(line)
		var cb callback
		ok := false
		if err == nil {
			cb, ok = parseCallback(u.Query())
		}
		if !ok {
			fmt.Fprintln(out, "That is not the redirected address (it has no code=...): paste the whole address from the browser's bar.")
			continue
		}
		if err := c.offer(cb); err != nil {
			fmt.Fprintf(out, "That address is %s: paste the address this sign-in was redirected to.\n", err)
			continue
		}
		return
	}
}
