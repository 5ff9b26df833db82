package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
)

// uiCookie carries a browser's proof that it presented the token.
const uiCookie = "mcpkeep_ui"

// uiAuth is the live page's access rule (docs/design.md §28): with a
// token, every request needs it (Authorization: Bearer) or the cookie set
// after it was presented; without one, a loopback listener serves anyone
// on the machine and a listener off loopback shows no secrets and takes
// no action. Every POST carries the CSRF token as well.
type uiAuth struct {
	token string
	// key derives the cookie and the CSRF token: from the token when
	// there is one (both outlive a restart, so an open page carries on),
	// else random for this process.
	key []byte
}

func newUIAuth(token string) *uiAuth {
	a := &uiAuth{token: token}
	if token != "" {
		k := sha256.Sum256([]byte("mcpkeep live page\x00" + token))
		a.key = k[:]
	} else {
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key) // never fails (crypto/rand)
	}
	return a
}

func (a *uiAuth) mac(what string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(what))
	return hex.EncodeToString(m.Sum(nil))
}

// csrf is the token every POST must carry (form field or X-CSRF-Token).
func (a *uiAuth) csrf() string { return a.mac("csrf") }

// checkCSRF reports whether r carries the CSRF token.
func (a *uiAuth) checkCSRF(r *http.Request) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(a.csrf())) == 1
}

// signedIn reports whether r may see the page with its secrets: it
// carries the token or the cookie (always true without a token).
func (a *uiAuth) signedIn(r *http.Request) bool {
	if a.token == "" {
		return true
	}
	if carriesToken(r, a.token) {
		return true
	}
	c, err := r.Cookie(uiCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.mac("session"))) == 1
}

// trusted reports whether r may read errors and act: signed in, and,
// without a token, on a loopback listener only.
func (a *uiAuth) trusted(r *http.Request) bool {
	if a.token == "" {
		return localRequest(r)
	}
	return a.signedIn(r)
}

// presentedToken checks a token typed into the sign-in form.
func (a *uiAuth) presentedToken(got string) bool {
	return a.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

// setCookie is called only after the token was presented.
func (a *uiAuth) setCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: a.mac("session"), Path: "/ui",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}
