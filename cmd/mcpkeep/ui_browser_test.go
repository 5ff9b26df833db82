package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// envRequireBrowser, set (as .ci/run does), turns a missing Chromium
// into a failure instead of a skip.
const envRequireBrowser = "MCPKEEP_REQUIRE_BROWSER"

// chromium finds Debian's chromium (or another Chromium or Chrome) on
// PATH; without one the browser test says how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH: the live page's browser test needs it (Debian: apt-get install -y chromium; .ci/run installs it)"
	if os.Getenv(envRequireBrowser) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium for the test; it is gone when the
// test ends.
func browser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Start the browser now, bounded: a browser that does not come up
	// fails the test instead of hanging it. (The first call's context
	// must have no deadline: the browser lives as long as it.)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start Chromium: %v", err)
		}
	case <-time.After(browserStart):
		cancel()
		<-started
		t.Fatalf("Chromium did not start within %v", browserStart)
	}
	return ctx
}

// browserStart bounds Chromium's start. A cold start (a fresh profile,
// fontconfig's first cache on a new machine) while make test's other
// packages load both cores took over e2eDeadline once (20 s); the start
// is not what the test measures, so it gets its own, wider bound.
const browserStart = 2 * time.Minute

// browse runs steps, bounded by the e2e deadline.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eDeadline)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates js in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eDeadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// pollPage evaluates js (made a boolean) every 20 ms until it is true or
// within is over. An evaluation that fails (the page is reloading) is
// tried again.
func pollPage(t *testing.T, ctx context.Context, js string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for {
		ectx, cancel := context.WithDeadline(ctx, deadline)
		ok, err := chromedp.Run(ectx, chromedp.Evaluate[bool]("!!("+js+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v the page never had %s (last error: %v)", within, js, last)
		}
		time.Sleep(20 * time.Millisecond) // the page's own pace: nothing to wake us
	}
}

// screenshot is the whole page as PNG.
func screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eDeadline)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return png
}

// freeLoopbackAddr returns a loopback address whose port was free a
// moment ago, for a proxy restarted on the same address.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// logTime is when the proxy logged msg for server after after (JSON log).
func logTime(t *testing.T, stderr, msg, server string, after time.Time) time.Time {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Server string    `json:"server"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Msg != msg || rec.Server != server || !rec.Time.After(after) {
			continue
		}
		return rec.Time
	}
	t.Fatalf("no %q of %s after %v in the log", msg, server, after)
	return time.Time{}
}

// artifactDir is where screenshots go: $MCPKEEP_ARTIFACTS, else the
// test's temporary directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("MCPKEEP_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestLivePageInBrowser drives the live page (docs/design.md §28) in a
// real headless Chromium: `proxy --listen` with a token, a steady server
// and one that crashes every few seconds. It signs in with the token,
// checks that the crash shows on the page within a second of the loss
// (read from the DOM, measured against the proxy's log), that the retry
// countdown counts down, that the reconnect button works and that a
// reconnect without the token, without the CSRF token or from another
// origin is refused; that the stop button stops the server with an idle
// stop (and is refused likewise); that the page reconnects by itself when mcpkeep
// restarts on its address; and that it fits a phone's width. Screenshots
// are saved as artifacts.
func TestLivePageInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t, 1400, 1100)
	const token = "s3cret-page"
	crashy := fixtureServer(t, "exit-after=3s")
	crashy["reconnect"] = map[string]any{"initialDelayMs": 3000, "maxDelayMs": 3000, "maxAttempts": 20}
	idler := fixtureServer(t, "normal")
	idler["idleStopMs"] = 3_600_000 // an idle stop whose timer never fires here: the button's
	cfg := map[string]any{"mcpServers": map[string]any{"steady": fixtureServer(t, "normal"), "crashy": crashy, "idler": idler}}
	env := []string{"MCPKEEP_TEST_PAGE_TOKEN=" + token}
	addr := freeLoopbackAddr(t)
	r := startListen(t, cfg, env, "--auth-token-env", "MCPKEEP_TEST_PAGE_TOKEN", "--listen", addr)
	page := "http://" + addr + "/ui"

	// Signing in: without the token the page is the sign-in form.
	browse(t, ctx, "open the page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("token")))
	browse(t, ctx, "sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`.server[data-server="crashy"]`)))
	pollPage(t, ctx, `document.querySelector("#live").dataset.live === "on"`, 5*time.Second)

	// Record every change of crashy's state on the page, with the
	// browser's clock (the same machine's as the proxy's log).
	eval[bool](t, ctx, `(() => {
		window.__states = [];
		const row = () => document.querySelector('.server[data-server="crashy"]');
		const note = () => { const s = row().dataset.state; const l = window.__states;
			if (!l.length || l[l.length-1].state !== s) l.push({state: s, at: Date.now()}); };
		note();
		new MutationObserver(note).observe(document.querySelector("#servers"), {subtree: true, attributes: true, attributeFilter: ["data-state"], childList: true});
		return true; })()`)
	// Wait for crashy to serve, then for its next loss on the page.
	pollPage(t, ctx, `window.__states.some(s => s.state === "established")`, e2eDeadline)
	estAt := eval[float64](t, ctx, `window.__states.findLast(s => s.state === "established").at`)
	established := time.UnixMilli(int64(estAt))
	pollPage(t, ctx, `(() => { const l = window.__states; const i = l.findLastIndex(s => s.state === "established");
		return i >= 0 && i < l.length - 1; })()`, e2eDeadline)
	change := eval[struct {
		State string  `json:"state"`
		At    float64 `json:"at"`
	}](t, ctx, `(() => { const l = window.__states; return l[l.findLastIndex(s => s.state === "established") + 1]; })()`)
	lostAt := logTime(t, r.stderr.String(), "connection lost", "crashy", established.Add(-time.Second))
	shown := time.UnixMilli(int64(change.At))
	latency := shown.Sub(lostAt)
	t.Logf("loss → page: crashy logged connection lost at %s, the page showed %q at %s: %v",
		lostAt.Format("15:04:05.000"), change.State, shown.Format("15:04:05.000"), latency)
	if latency > time.Second {
		t.Errorf("the loss reached the page after %v, want within a second", latency)
	}
	if change.State != "lost" && change.State != "backing-off" {
		t.Errorf("after established the page showed %q, want lost or backing-off", change.State)
	}

	// The countdown counts down while crashy backs off.
	pollPage(t, ctx, `document.querySelector('.server[data-server="crashy"]').dataset.state === "backing-off"`, e2eDeadline)
	retry := `parseFloat((document.querySelector('.server[data-server="crashy"] [data-f="retry"]').textContent.match(/in ([0-9.]+) s/) || [])[1])`
	first := eval[float64](t, ctx, retry)
	// The delay is 3 s; the page reckons the server's clock from each
	// event's time, so the event's transit adds a little.
	if first <= 0 || first > 3.5 {
		t.Fatalf("countdown at first %v s, want in (0, 3.5] (the delay is 3 s)", first)
	}
	pollPage(t, ctx, fmt.Sprintf(`%s <= %v - 0.3`, retry, first), 2*time.Second)

	// Screenshots: the desktop page, followed server on the chart.
	browse(t, ctx, "follow crashy", chromedp.Click(chromedp.CSS(`.server[data-server="crashy"] .name`)))
	pollPage(t, ctx, `document.querySelector("svg.chart").classList.contains("focused")`, 2*time.Second)
	// Followed: its state outlined, its loss traced on the chart.
	if got := eval[string](t, ctx, `Array.from(document.querySelectorAll("svg.chart g.node.focus")).map(g => g.dataset.state).join()`); got != "backing-off" {
		t.Errorf("the chart outlines %q for crashy, want backing-off", got)
	}
	if !eval[bool](t, ctx, `!!document.querySelector('svg.chart g.edge.trail[data-from="established"][data-to="lost"][data-event="closed"]') &&
		!!document.querySelector('svg.chart g.edge.last[data-from="lost"][data-to="backing-off"][data-event="released"]')`) {
		t.Error("the chart does not trace crashy's closed and released transitions")
	}
	// Its stderr tail, from the log (the fixture names its mode there).
	browse(t, ctx, "open the stderr tail", chromedp.Click(chromedp.CSS(`.server[data-server="crashy"] .tail summary`)))
	pollPage(t, ctx, `document.querySelector('.server[data-server="crashy"] [data-f="tail"]').textContent.includes("exit-after")`, 2*time.Second)
	shot := screenshot(t, ctx)
	dir := artifactDir(t)
	if err := os.WriteFile(filepath.Join(dir, "ui.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, "ui.png"))

	// Refused: no token, a wrong CSRF token, another origin. Nothing of
	// crashy changes.
	csrf := eval[string](t, ctx, `document.body.dataset.csrf`)
	if csrf == "" {
		t.Fatal("the signed-in page carries no CSRF token")
	}
	for _, c := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no token", http.Header{"X-Csrf-Token": {csrf}}, http.StatusUnauthorized},
		{"wrong token", http.Header{"X-Csrf-Token": {csrf}, "Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"no CSRF token", http.Header{"Authorization": {"Bearer " + token}}, http.StatusForbidden},
		{"wrong CSRF token", http.Header{"Authorization": {"Bearer " + token}, "X-Csrf-Token": {"00" + csrf[2:]}}, http.StatusForbidden},
		{"cross-origin", http.Header{"Authorization": {"Bearer " + token}, "X-Csrf-Token": {csrf},
			"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"rebinding Host", http.Header{"Authorization": {"Bearer " + token}, "X-Csrf-Token": {csrf}, "Host-Override": {"evil.example"}}, http.StatusForbidden},
	} {
		for _, act := range []string{"crashy/reconnect", "idler/stop"} {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/ui/servers/"+act, nil)
			req.Header = c.header
			if h := c.header.Get("Host-Override"); h != "" {
				req.Host = h + ":" + strings.Split(addr, ":")[1]
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s with %s: %d, want %d", act, c.name, resp.StatusCode, c.want)
			}
		}
	}
	if out := r.stderr.String(); strings.Contains(out, "reconnect from the live page") || strings.Contains(out, "idle stop from the live page") {
		t.Error("a refused action reached the server")
	}

	// The reconnect button, with the cookie the token bought: crashy,
	// backing off, connects at once as the next generation.
	pollPage(t, ctx, `document.querySelector('.server[data-server="crashy"]').dataset.state === "backing-off"`, e2eDeadline)
	gen := eval[string](t, ctx, `document.querySelector('.server[data-server="crashy"] [data-f="gen"]').textContent`)
	browse(t, ctx, "click reconnect", chromedp.Click(chromedp.CSS(`.server[data-server="crashy"] [data-f="reconnect"]`)))
	pollPage(t, ctx, `document.querySelector("#toast").textContent === "crashy: reconnecting"`, 5*time.Second)
	n, _ := strconv.Atoi(gen)
	pollPage(t, ctx, fmt.Sprintf(`+document.querySelector('.server[data-server="crashy"] [data-f="gen"]').textContent > %d`, n), 2*time.Second)
	r.stderr.waitFor(t, `"msg":"reconnect from the live page","server":"crashy"`)

	// The stop button: offered to idler (it has an idle stop), not to
	// steady. idler stops for idleness: idle on the page, its catalog
	// kept, the button off until it serves again (its reconnect here).
	idlerRow := `document.querySelector('.server[data-server="idler"]')`
	if !eval[bool](t, ctx, `document.querySelector('.server[data-server="steady"] [data-f="stop-form"]').hidden &&
		!`+idlerRow+`.querySelector('[data-f="stop-form"]').hidden &&
		document.querySelector('.server[data-server="steady"] [data-f="inflight"]').textContent === "0"`) {
		t.Error("the stop button is not offered exactly to the server with an idle stop, or a row shows no requests in flight")
	}
	pollPage(t, ctx, idlerRow+`.dataset.state === "established" && !`+idlerRow+`.querySelector('[data-f="stop"]').disabled`, e2eDeadline)
	catalog := eval[string](t, ctx, idlerRow+`.querySelector('[data-f="catalog"]').textContent`)
	browse(t, ctx, "click stop", chromedp.Click(chromedp.CSS(`.server[data-server="idler"] [data-f="stop"]`)))
	pollPage(t, ctx, `document.querySelector("#toast").textContent === "idler: stopping"`, 5*time.Second)
	pollPage(t, ctx, idlerRow+`.dataset.state === "idle" && `+idlerRow+`.querySelector('[data-f="stop"]').disabled`, 5*time.Second)
	r.stderr.waitFor(t, `"msg":"idle stop from the live page","server":"idler"`)
	if got := eval[string](t, ctx, idlerRow+`.querySelector('[data-f="catalog"]').textContent`); got != catalog || strings.HasPrefix(got, "0 tools") {
		t.Errorf("idler's catalog after the stop: %q, want it kept (%q)", got, catalog)
	}
	if got := eval[string](t, ctx, idlerRow+`.querySelector('[data-f="attempt"]').textContent`); !strings.HasPrefix(got, "0 of") {
		t.Errorf("idler's attempt after the stop: %q, want no retry spent", got)
	}
	browse(t, ctx, "click reconnect on idler", chromedp.Click(chromedp.CSS(`.server[data-server="idler"] [data-f="reconnect"]`)))
	pollPage(t, ctx, idlerRow+`.dataset.state === "established" && !`+idlerRow+`.querySelector('[data-f="stop"]').disabled`, e2eDeadline)

	// A restart: the page notices the stream's end, then follows the
	// next mcpkeep on the same address by itself (the cookie, derived
	// from the token, still holds).
	_ = r.cmd.Signal(syscall.SIGTERM)
	r.stderr.waitFor(t, `"msg":"stopped"`)
	pollPage(t, ctx, `document.querySelector("#live").dataset.live === "off"`, 5*time.Second)
	r2 := startListen(t, cfg, env, "--auth-token-env", "MCPKEEP_TEST_PAGE_TOKEN", "--listen", addr)
	r2.stderr.waitFor(t, `"msg":"listening"`)
	pollPage(t, ctx, `document.querySelector("#live").dataset.live === "on" &&
		document.querySelector('.server[data-server="steady"]').dataset.state === "established"`, 10*time.Second)

	// A phone's width: the page fits (the chart scrolls in its box).
	phone := browser(t, 390, 844)
	u, _ := url.Parse(page)
	browse(t, phone, "open on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(u.String()), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`.server[data-server="crashy"]`)))
	overflow := eval[float64](t, phone, `document.documentElement.scrollWidth - window.innerWidth`)
	if overflow > 0 {
		t.Errorf("at 390 px the page is %v px wider than the screen", overflow)
	}
	shot = screenshot(t, phone)
	if err := os.WriteFile(filepath.Join(dir, "ui-phone.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	// Without JavaScript: the server's snapshot, which reloads itself.
	browse(t, phone, "turn JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`.server[data-server="crashy"]`)))
	if !eval[bool](t, phone, `document.querySelector("#live").dataset.live === "static" &&
		!!document.querySelector('svg.chart g.node.lit[data-state="established"]')`) {
		t.Error("without JavaScript the page is not the server's snapshot with the chart lit")
	}
	eval[bool](t, phone, `(document.body.dataset.marked = "1") === "1"`)
	pollPage(t, phone, `document.body && document.body.dataset.marked === undefined && !!document.querySelector('.server[data-server="crashy"]')`, 10*time.Second)
}

// TestBrowserDriverOnlyInTests: chromedp drives the page's test only; the
// shipped binary (and so every library package it links) imports none of
// it (docs/design.md §1, §28).
func TestBrowserDriverOnlyInTests(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*e2eDeadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/chromedp/") {
			t.Errorf("mcpkeep links %s: chromedp is for tests only", p)
		}
	}
}
