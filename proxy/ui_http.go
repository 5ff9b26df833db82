package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// uiPing is how often an idle event stream sends a comment: a proxy or a
// browser that closes quiet connections keeps it, and a page that went
// away is noticed.
const uiPing = 15 * time.Second

// uiRetryMs is the EventSource retry interval the stream asks for: the
// page reconnects this soon after mcpkeep comes back.
const uiRetryMs = 1000

// uiHandler serves the live page (docs/design.md §28) under /ui:
//
//	GET  /ui                          the page (a static snapshot without JavaScript)
//	GET  /ui/events                   server-sent events: the view at every change
//	POST /ui/login                    the sign-in form (with a token): sets the cookie
//	POST /ui/servers/{name}/reconnect a manual reconnect
//	POST /ui/servers/{name}/stop      an idle stop by hand (a server with an idle stop)
//	GET  /ui/assets/...               style and script (embedded)
//
// A browser page of another origin is refused (cop), as on /mcp, and on a
// loopback listener a Host that is not loopback (DNS rebinding); see
// uiAuth for who may read and act.
func (s *Server) uiHandler(token string, cop *http.CrossOriginProtection) http.Handler {
	a := newUIAuth(token)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { s.uiPage(w, r, a) })
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /ui/login", func(w http.ResponseWriter, r *http.Request) { s.uiLogin(w, r, a) })
	mux.HandleFunc("GET /ui/events", func(w http.ResponseWriter, r *http.Request) { s.uiEvents(w, r, a) })
	mux.HandleFunc("POST /ui/servers/{name}/reconnect", func(w http.ResponseWriter, r *http.Request) {
		s.uiAct(w, r, a, uiReconnect)
	})
	mux.HandleFunc("POST /ui/servers/{name}/stop", func(w http.ResponseWriter, r *http.Request) {
		s.uiAct(w, r, a, uiStop)
	})
	assets, _ := fs.Sub(uiFiles, "ui") // embedded: cannot fail
	static := http.StripPrefix("/ui/assets/", http.FileServerFS(assets))
	mux.Handle("GET /ui/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	}))
	return rebindGuard(cop.Handler(mux))
}

// uiHeaders are every response's: nothing cached, no framing by other
// sites, no script but our own.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
}

// uiPage serves the page, or the sign-in form to a browser that has not
// presented the token. A request with the token gets the cookie with the
// page.
func (s *Server) uiPage(w http.ResponseWriter, r *http.Request, a *uiAuth) {
	uiHeaders(w)
	if !a.signedIn(r) {
		s.uiSignIn(w, a, "")
		return
	}
	if a.token != "" && carriesToken(r, a.token) {
		a.setCookie(w, r)
	}
	v := s.uiViewFor(r, a)
	lit := map[string]bool{}
	for _, sv := range v.Servers {
		lit[sv.State] = true
	}
	data := uiPageData{View: v, Chart: template.HTML(litChart(lit)), StateCSS: template.CSS(stateCSS()),
		Legend: fsm.States, Blank: uiServer{State: fsm.Initial.String(), Start: "eager"}}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := uiTemplates().ExecuteTemplate(w, "page.html", data); err != nil {
		s.log.Warn("live page", "err", err)
	}
}

// uiViewFor is the view r may see: errors, the CSRF token and the
// buttons only for a trusted request (uiAuth.trusted).
func (s *Server) uiViewFor(r *http.Request, a *uiAuth) uiView {
	trusted := a.trusted(r)
	v := s.uiView(trusted)
	v.Actions = trusted
	if trusted {
		v.CSRF = a.csrf()
	}
	return v
}

// uiSignIn answers 401 with the sign-in form.
func (s *Server) uiSignIn(w http.ResponseWriter, a *uiAuth, problem string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("WWW-Authenticate", "Bearer")
	w.WriteHeader(http.StatusUnauthorized)
	_ = uiTemplates().ExecuteTemplate(w, "signin.html", struct{ CSRF, Problem string }{a.csrf(), problem})
}

// uiLogin takes the token from the sign-in form; the cookie is set only
// when it is right.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request, a *uiAuth) {
	uiHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !a.checkCSRF(r) {
		http.Error(w, "forbidden: the form's CSRF token is missing or wrong (reload the page)", http.StatusForbidden)
		return
	}
	if !a.presentedToken(r.PostFormValue("token")) {
		s.uiSignIn(w, a, "That token is not right.")
		return
	}
	a.setCookie(w, r)
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

// uiEvents streams the view as server-sent events: one at once, then one
// at every transition (coalesced while the page reads), until the page
// goes away or mcpkeep shuts down.
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request, a *uiAuth) {
	uiHeaders(w)
	if !a.signedIn(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", uiRetryMs); err != nil {
		return
	}
	ping := time.NewTicker(uiPing)
	defer ping.Stop()
	poll := time.NewTicker(uiLoadPoll)
	defer poll.Stop()
	write := func(format string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(hostWriteBound))
		_, err := fmt.Fprintf(w, format, args...)
		return err == nil && rc.Flush() == nil
	}
	for {
		changed := s.health.ui.changed() // before the read: no change is missed
		v := s.uiViewFor(r, a)
		body, _ := json.Marshal(v) // strings, numbers and bools
		if !write("event: state\ndata: %s\n\n", body) {
			return
		}
		if !s.uiAwait(changed, v.load(), poll.C, ping.C, r, write) {
			return
		}
	}
}

// uiAwait waits for the next change (a transition, or other requests in
// flight than the page shows: sent, the load it showed), pinging the page
// meanwhile; false when the stream is to end (the page went away, mcpkeep
// shuts down, a write failed).
func (s *Server) uiAwait(changed <-chan struct{}, sent string, poll, ping <-chan time.Time, r *http.Request, write func(string, ...any) bool) bool {
	for {
		select {
		case <-changed:
			return true
		case <-poll:
			if s.uiLoad() != sent {
				return true
			}
		case <-ping:
			if !write(": ping\n\n") {
				return false
			}
		case <-r.Context().Done():
			return false
		case <-s.health.ui.stopped:
			return false
		}
	}
}

// uiAction is one of the page's buttons: what it asks of the server, and
// what the log and the page say when it was done.
type uiAction struct {
	do    func(*mcpkeep.Supervisor, context.Context) error
	log   string
	doing string
}

var (
	uiReconnect = uiAction{do: func(sup *mcpkeep.Supervisor, _ context.Context) error { return sup.Reconnect() },
		log: "reconnect from the live page", doing: "reconnecting"}
	// uiStop is §20's idle stop asked for now (Supervisor.StopIdle): the
	// server ends through its close barrier into idle, its catalog kept,
	// and the next request starts it again.
	uiStop = uiAction{do: (*mcpkeep.Supervisor).StopIdle,
		log: "idle stop from the live page", doing: "stopping"}
)

// uiActionCode is the status of an action the server refused: 409 for
// what its state does not allow (no row declared, not established, no
// idle stop, a request in flight).
func uiActionCode(err error) int {
	switch {
	case errors.Is(err, fsm.ErrNotDeclared), errors.Is(err, mcpkeep.ErrNotConnected),
		errors.Is(err, mcpkeep.ErrNotIdleable), errors.Is(err, mcpkeep.ErrBusy):
		return http.StatusConflict
	case errors.Is(err, mcpkeep.ErrDisposed), errors.Is(err, mcpkeep.ErrNotStarted):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// uiAct runs a manual action on one server: from a script (X-CSRF-Token,
// answered in JSON) or from the page's form without JavaScript (answered
// with a redirect back to the page).
func (s *Server) uiAct(w http.ResponseWriter, r *http.Request, a *uiAuth, act uiAction) {
	uiHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	script := r.Header.Get("X-CSRF-Token") != ""
	fail := func(code int, msg string) {
		if script {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": msg})
			return
		}
		http.Error(w, msg, code)
	}
	switch {
	case !a.signedIn(r):
		w.Header().Set("WWW-Authenticate", "Bearer")
		fail(http.StatusUnauthorized, "unauthorized")
		return
	case !a.trusted(r):
		fail(http.StatusForbidden, "forbidden: actions need a token on a listener off loopback (--auth-token-env)")
		return
	case !a.checkCSRF(r):
		fail(http.StatusForbidden, "forbidden: the CSRF token is missing or wrong (reload the page)")
		return
	}
	name := r.PathValue("name")
	pool := s.getPool()
	if pool == nil {
		fail(http.StatusServiceUnavailable, "the servers have not started yet")
		return
	}
	sup, ok := pool.Supervisor(name)
	if !ok {
		sup, ok = s.twins.supervisor(name) // an era twin's row (§24)
	}
	if !ok {
		fail(http.StatusNotFound, fmt.Sprintf("no server %q", name))
		return
	}
	if err := act.do(sup, r.Context()); err != nil {
		fail(uiActionCode(err), redactText(err.Error()))
		return
	}
	s.log.Info(act.log, "server", name)
	if script {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "state": sup.State().State.String(), "doing": act.doing})
		return
	}
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

// uiPageData is the page template's input.
type uiPageData struct {
	View     uiView
	Chart    template.HTML
	StateCSS template.CSS
	Legend   []fsm.State
	Blank    uiServer // the row template's content, for servers the script adds
}

// uiRow is the row template's input: the view (for the time, the CSRF
// token and whether actions are offered) and one server.
type uiRow struct {
	V uiView
	S uiServer
}

// uiTemplates parses the embedded templates once.
var uiTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"path":    url.PathEscape,
		"rowData": func(v uiView, sv uiServer) uiRow { return uiRow{V: v, S: sv} },
		"retry": func(now, next string) string {
			n, err1 := time.Parse(time.RFC3339Nano, now)
			t, err2 := time.Parse(time.RFC3339Nano, next)
			if next == "" || err1 != nil || err2 != nil {
				return "—"
			}
			return retryText(t.Sub(n))
		},
		"clock": func(at string) string {
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return at
			}
			return t.Local().Format("15:04:05.000")
		},
		"plural": func(n int, word string) string {
			if n == 1 {
				return fmt.Sprintf("%d %s", n, word)
			}
			return fmt.Sprintf("%d %ss", n, word)
		},
		"json": func(v any) (template.JS, error) {
			b, err := json.Marshal(v)
			return template.JS(b), err
		},
	}).ParseFS(uiFiles, "ui/*.html"))
})

// retryText is a countdown as the page shows it (the script computes the
// same).
func retryText(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return fmt.Sprintf("in %.1f s", d.Seconds())
}
