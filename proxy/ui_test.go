package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// TestUIChartTagsTheDeclaration: the page's chart names every declared
// state and every row of fsm.Table, so the page lights them by name
// whatever the table declares (docs/design.md §28).
func TestUIChartTagsTheDeclaration(t *testing.T) {
	svg := chartSVG()
	if strings.Contains(svg, "<?xml") || !strings.HasPrefix(strings.TrimSpace(svg), "<svg class=\"chart\"") {
		t.Errorf("the chart is not ready to inline: %.80q", svg)
	}
	for _, s := range fsm.States {
		if !strings.Contains(svg, `class="node" data-state="`+s.String()+`"`) {
			t.Errorf("no node tagged data-state=%q", s)
		}
	}
	for _, row := range fsm.Table {
		tag := `data-from="` + row.From.String() + `" data-to="` + row.To.String() + `" data-event="` + row.Event.String() + `"`
		if !strings.Contains(svg, tag) {
			t.Errorf("no edge tagged %s", tag)
		}
	}
	lit := litChart(map[string]bool{"backing-off": true})
	if !strings.Contains(lit, `class="node lit" data-state="backing-off"`) || strings.Count(lit, "node lit") != 1 {
		t.Error("litChart does not light exactly backing-off")
	}
	for _, s := range fsm.States {
		if !strings.Contains(stateCSS(), `[data-state="`+s.String()+`"]{--sc:`+s.Color()+`}`) {
			t.Errorf("the page has no colour for %s", s)
		}
	}
}

// uiRig serves a rig's Server with a token on a loopback httptest server.
func uiRig(t *testing.T, token string) (*rig, *httptest.Server) {
	t.Helper()
	return uiRigWith(t, token, nil, "a")
}

// uiRigWith is uiRig with the servers names, some with more keys.
func uiRigWith(t *testing.T, token string, extra map[string]map[string]any, names ...string) (*rig, *httptest.Server) {
	t.Helper()
	r := newRigWith(t, Options{}, extra, names...)
	h, err := r.srv.Handler(HTTPOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	r.waitApplied()
	return r, hs
}

func uiDo(t *testing.T, method, u string, header http.Header, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUIAccess: with a token, the page and its stream need it (or the
// cookie set after it was presented), every POST needs the CSRF token,
// another origin and a rebinding Host are refused, and a reconnect that
// passes them all reaches the server.
func TestUIAccess(t *testing.T) {
	const token = "tok-123"
	// a has an idle stop (an hour: its timer never fires here), b none.
	r, hs := uiRigWith(t, token, map[string]map[string]any{"a": {"idleStopMs": 3_600_000}}, "a", "b")
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	csrf := newUIAuth(token).csrf()

	resp, body := uiDo(t, "GET", hs.URL+"/ui", nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `action="/ui/login"`) || strings.Contains(body, "data-server") {
		t.Errorf("GET /ui without the token: %d, want 401 and the sign-in form only", resp.StatusCode)
	}
	if resp, _ := uiDo(t, "GET", hs.URL+"/ui/events", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /ui/events without the token: %d, want 401", resp.StatusCode)
	}
	resp, body = uiDo(t, "GET", hs.URL+"/ui", bearer, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-server="a"`) || !strings.Contains(body, csrf) {
		t.Fatalf("GET /ui with the token: %d, want 200, server a's row and the CSRF token", resp.StatusCode)
	}
	// Without JavaScript: the rows and the lit chart are rendered on the
	// server, and the page refreshes itself.
	for _, want := range []string{`<noscript><meta http-equiv="refresh" content="5"></noscript>`,
		`class="node lit" data-state="established"`, `data-server="a" data-state="established"`,
		`<form class="act" method="post" action="/ui/servers/a/reconnect"`,
		`<form class="act" method="post" action="/ui/servers/a/stop" data-f="stop-form"`,
		`<form class="act" method="post" action="/ui/servers/b/stop" data-f="stop-form" data-act="stop" data-doing="stopping" hidden>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == uiCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || strings.Contains(cookie.Value, token) {
		t.Fatalf("cookie after the token: %+v, want HttpOnly, SameSite=Strict, not the token", cookie)
	}
	withCookie := http.Header{"Cookie": {cookie.String()}}
	if resp, _ := uiDo(t, "GET", hs.URL+"/ui", withCookie, nil); resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 {
		t.Errorf("GET /ui with the cookie: %d (cookies %v), want 200 and no new cookie", resp.StatusCode, resp.Cookies())
	}

	// The sign-in form: CSRF first, then the token; the cookie only for
	// the right one.
	if resp, _ := uiDo(t, "POST", hs.URL+"/ui/login", nil, url.Values{"token": {token}}); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("login without CSRF: %d, want 403 and no cookie", resp.StatusCode)
	}
	if resp, _ := uiDo(t, "POST", hs.URL+"/ui/login", nil, url.Values{"token": {"nope"}, "csrf": {csrf}}); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d, want 401 and no cookie", resp.StatusCode)
	}
	resp, _ = uiDo(t, "POST", hs.URL+"/ui/login", nil, url.Values{"token": {token}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != cookie.Value {
		t.Errorf("login with the token: %d %v, want 303 and the cookie", resp.StatusCode, resp.Cookies())
	}

	port := hs.Listener.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name   string
		header http.Header
		host   string
		want   int
	}{
		{"no token", http.Header{"X-Csrf-Token": {csrf}}, "", http.StatusUnauthorized},
		{"no CSRF token", bearer, "", http.StatusForbidden},
		{"a wrong CSRF token", http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {"x" + csrf[1:]}}, "", http.StatusForbidden},
		{"another origin", http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}, "Origin": {"http://evil.example"}}, "", http.StatusForbidden},
		{"a cross-site fetch", http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}, "Sec-Fetch-Site": {"cross-site"}}, "", http.StatusForbidden},
		{"a rebinding Host", http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}}, "evil.example:" + strconv.Itoa(port), http.StatusForbidden},
		{"an unknown server", http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}}, "", http.StatusNotFound},
	} {
		for _, action := range []string{"reconnect", "stop"} {
			u := hs.URL + "/ui/servers/a/" + action
			if c.name == "an unknown server" {
				u = hs.URL + "/ui/servers/zz/" + action
			}
			req, _ := http.NewRequest("POST", u, nil)
			req.Header = c.header
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s with %s: %d, want %d", action, c.name, resp.StatusCode, c.want)
			}
		}
	}
	sup, _ := r.srv.getPool().Supervisor("a")
	if s := sup.State(); s.Gen != 1 || s.State != fsm.Established {
		t.Fatalf("after refused actions a is %s at gen %d, want established at gen 1", s.State, s.Gen)
	}
	act := hs.URL + "/ui/servers/a/reconnect"
	resp, body = uiDo(t, "POST", act, http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("reconnect with the cookie and CSRF: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "a's next generation", func() bool { s := sup.State(); return s.Gen == 2 && s.State == fsm.Established })
	// Without a script: the form posts its csrf field and is sent back.
	resp, _ = uiDo(t, "POST", act, bearer, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" {
		t.Errorf("form reconnect: %d to %q, want 303 to /ui", resp.StatusCode, resp.Header.Get("Location"))
	}
	waitFor(t, "a's generation 3", func() bool { s := sup.State(); return s.Gen == 3 && s.State == fsm.Established })

	// Stop: b has no idle stop (409, nothing changes); a stops into idle,
	// its catalog kept; stopped, it cannot be stopped again (409); a
	// request starts it.
	signed := http.Header{"Cookie": {cookie.String()}, "X-Csrf-Token": {csrf}}
	resp, body = uiDo(t, "POST", hs.URL+"/ui/servers/b/stop", signed, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "no idle stop") {
		t.Errorf("stop of b (no idle stop): %d %s, want 409 saying so", resp.StatusCode, body)
	}
	resp, body = uiDo(t, "POST", hs.URL+"/ui/servers/a/stop", signed, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"doing":"stopping"`) {
		t.Fatalf("stop of a with the cookie and CSRF: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "a idle", func() bool { return sup.State().State == fsm.Idle })
	if s := sup.State(); s.Tools == 0 || s.Attempt != 0 || s.LastErr != nil {
		t.Errorf("a after the stop: %+v, want its catalog kept and no outage", s)
	}
	resp, body = uiDo(t, "POST", hs.URL+"/ui/servers/a/stop", signed, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "not connected") {
		t.Errorf("stop of an idle a: %d %s, want 409 (not connected)", resp.StatusCode, body)
	}
	if res, err := sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil); err != nil || res.IsError {
		t.Fatalf("a call to the stopped a: %v %+v", err, res)
	}
	if s := sup.State(); s.State != fsm.Established || s.Gen != 4 {
		t.Errorf("after a call a is %s at gen %d, want established at gen 4 (woken by the call)", s.State, s.Gen)
	}
	resp, _ = uiDo(t, "POST", hs.URL+"/ui/servers/a/stop", bearer, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" {
		t.Errorf("form stop: %d to %q, want 303 to /ui", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestUIOffLoopbackWithoutToken: a listener off loopback without a token
// shows the page without errors and takes no action.
func TestUIOffLoopbackWithoutToken(t *testing.T) {
	r := newRig(t, Options{}, "a")
	h, err := r.srv.OpsHandlerWith(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	off := func(method, target string, hdr http.Header) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		req.Host = "192.0.2.7:8731"
		req.Header = hdr
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey,
			&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8731}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := off("GET", "/ui", http.Header{})
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "/reconnect") || strings.Contains(rec.Body.String(), "/stop") ||
		strings.Contains(rec.Body.String(), `name="csrf"`) {
		t.Errorf("GET /ui off loopback: %d, want 200 without reconnect or stop forms or CSRF token", rec.Code)
	}
	csrf := newUIAuth("").csrf() // another process's: it does not matter, the refusal comes first
	for _, action := range []string{"reconnect", "stop"} {
		if rec := off("POST", "/ui/servers/a/"+action, http.Header{"X-Csrf-Token": {csrf}}); rec.Code != http.StatusForbidden ||
			!strings.Contains(rec.Body.String(), "token") {
			t.Errorf("%s off loopback without a token: %d %s, want 403 naming the token", action, rec.Code, rec.Body)
		}
	}
}

// uiStream opens the event stream at u: events yields each view (closed
// when the stream ends), next waits for one within ctx.
func uiStream(t *testing.T, ctx context.Context, u string) (events <-chan uiView, next func() uiView) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	ch := make(chan uiView, 8)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v uiView
				if json.Unmarshal([]byte(data), &v) == nil {
					ch <- v
				}
			}
		}
	}()
	return ch, func() uiView {
		t.Helper()
		select {
		case v, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			return v
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return uiView{}
	}
}

// TestUIEventsShowRequestsInFlight: each row shows its server's requests
// in flight, and the stream sends the view again when they change (no
// transition announces a request), within its poll.
func TestUIEventsShowRequestsInFlight(t *testing.T) {
	r, hs := uiRigWith(t, "", nil, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	inFlight := func(v uiView) map[string]int {
		m := map[string]int{}
		for _, sv := range v.Servers {
			m[sv.Name] = sv.InFlight
		}
		return m
	}
	events, next := uiStream(t, ctx, hs.URL+"/ui/events")
	if m := inFlight(next()); m["a"] != 0 || m["b"] != 0 || len(m) != 2 {
		t.Fatalf("first view: in flight %v, want a and b at 0", m)
	}
	sup, _ := r.srv.getPool().Supervisor("b")
	callCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := sup.Call(callCtx, "hang", map[string]any{}, nil)
			done <- err
		}()
	}
	start := time.Now()
	for m := inFlight(next()); m["b"] != 2; m = inFlight(next()) {
		if m["a"] != 0 {
			t.Fatalf("in flight %v: a has none", m)
		}
	}
	t.Logf("two requests in flight shown after %v (poll %v)", time.Since(start), uiLoadPoll)
	// The page was sent as many views as there were changes, not one per
	// poll.
	select {
	case v := <-events:
		if inFlight(v)["b"] == 2 {
			t.Errorf("a view sent again without a change: %+v", v)
		}
	case <-time.After(uiLoadPoll + uiLoadPoll/2):
	}
	stop()
	<-done
	<-done
	for m := inFlight(next()); m["b"] != 0; m = inFlight(next()) {
	}
	r.srv.Health().Stop()
	for range events {
	}
}

// TestUIEventsFollowTransitions: the stream sends the view at once, again
// at a transition (from Health's observer, the one /readyz reads), and
// ends when the process starts shutting down.
func TestUIEventsFollowTransitions(t *testing.T) {
	r, hs := uiRig(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	events, next := uiStream(t, ctx, hs.URL+"/ui/events")
	if v := next(); len(v.Servers) != 1 || v.Servers[0].Name != "a" || v.Servers[0].State != "established" || v.CSRF == "" {
		t.Fatalf("first event %+v: want a established and a CSRF token (loopback)", v)
	}
	sup, _ := r.srv.getPool().Supervisor("a")
	if err := sup.Reconnect(); err != nil {
		t.Fatal(err)
	}
	for {
		v := next()
		rec := v.Servers[0].Recent
		if len(rec) > 0 && rec[len(rec)-1].Event == "reconnect" || v.Servers[0].Gen == 2 {
			break
		}
	}
	r.srv.Health().Stop()
	for range events { // the stream ends: the server closed it
	}
}

// TestLogTapKeepsStderrTails: the tap keeps each server's last tail, from
// the record or the logger's attributes, whatever the next handler's
// level, and passes on only what that handler takes.
func TestLogTapKeepsStderrTails(t *testing.T) {
	var out strings.Builder
	tap := NewLogTap(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}))
	log := slog.New(tap)
	log.Warn("connection lost", "server", "a", "stderr_tail", "boom\nat line 3")
	log.With("server", "b").Warn("connection failed", "stderr_tail", "no such file")
	log.WithGroup("g").Warn("other", "server", "c", "stderr_tail", "not a lifecycle record")
	log.Error("gave up", "server", "a")
	if got := tap.Tail("a"); got != "boom\nat line 3" {
		t.Errorf("Tail(a) = %q", got)
	}
	if got := tap.Tail("b"); got != "no such file" {
		t.Errorf("Tail(b) = %q", got)
	}
	if got := tap.Tail("c"); got != "" {
		t.Errorf("Tail(c) = %q, want none (grouped)", got)
	}
	if s := out.String(); strings.Contains(s, "connection lost") || !strings.Contains(s, "gave up") {
		t.Errorf("passed on %q: want the error only", s)
	}
}

// TestRedactText: the page shows errors without credentials.
func TestRedactText(t *testing.T) {
	got := redactText(`dial https://user:pw@example.com/mcp?key=abc: refused; sent Bearer sekrit`)
	for _, secret := range []string{"pw", "abc", "sekrit", "user"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q still holds %q", got, secret)
		}
	}
	if !strings.Contains(got, "example.com/mcp") {
		t.Errorf("%q lost which server it was", got)
	}
}
