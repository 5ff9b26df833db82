package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hostile-peer suite (docs/design.md §19, issue 20): one proxy, on
// stdio and on --listen, supervises a healthy server beside a server per
// hostile behaviour of the fixture, and a healthy host (beside, on
// --listen, a host that stops reading) checks that it is unaffected while
// each behaviour plays: its calls, progress and list_changed arrive on
// time, the proxy's memory stays bounded, each bad item or server is
// refused with a log line naming it, and SIGTERM with calls in flight
// exits 0 within 10 s with no child left.

// hostileRSSBound bounds the proxy's resident memory (VmRSS) during the
// whole suite, a 16 MiB message and the storms included. The proxy is a
// -race test binary, whose shadow memory multiplies the heap.
const hostileRSSBound = 350 << 20

// hostileHost is the healthy host of one proxy process.
type hostileHost struct {
	t        *testing.T
	kind     string // "stdio" or "listen"
	cs       *mcp.ClientSession
	stderr   *notifyingBuffer
	pid      int
	changed  chan struct{} // one token per prompts/list_changed (non-blocking)
	progress atomic.Int32
	logged   atomic.Int32
	// sigterm sends SIGTERM and waits (at most within) for the exit,
	// checking status 0 and that no fixture process is left.
	sigterm func(within time.Duration)
}

func (h *hostileHost) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { h.progress.Add(1) },
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { h.logged.Add(1) },
	}
}

var giveUp = map[string]any{"initialDelayMs": 100, "maxDelayMs": 200, "maxAttempts": 3, "jitter": 0}

// hostileConfig: ok is healthy; bad misbehaves on demand (its tools); the
// others misbehave in their listings or requests from the start.
func hostileConfig(t *testing.T) map[string]any {
	srv := func(mode string, extra map[string]any) map[string]any {
		s := fixtureServer(t, mode)
		s["reconnect"] = map[string]any{"initialDelayMs": 100, "maxDelayMs": 400, "maxAttempts": 1000, "jitter": 0}
		// One process per server: the test watches that process's lists
		// and log lines, which a 2026-07-28 host's calls on a twin process
		// would not touch (docs/design.md §24).
		s["eras"] = "shared"
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	return map[string]any{"mcpServers": map[string]any{
		"ok":     srv("normal", nil),
		"bad":    srv("normal", map[string]any{"connectTimeoutMs": 1500, "waitForReadyMs": 15000}),
		"baduri": srv("bad-uri", nil),
		// The refused servers give up after a few attempts: respawning
		// a -race binary every few hundred ms would starve the rest.
		"endless":     srv("endless-pages", map[string]any{"reconnect": giveUp}),
		"repeat":      srv("repeat-cursor", map[string]any{"reconnect": giveUp}),
		"silentlist":  srv("silent=tools/list", map[string]any{"connectTimeoutMs": 1000, "reconnect": giveUp}),
		"silentlevel": srv("silent=logging/setLevel", nil),
		"silentsub":   srv("silent=resources/subscribe", nil),
	}}
}

// startHostileStdio runs `mcpkeep proxy` with the healthy host on its
// stdio.
func startHostileStdio(t *testing.T) *hostileHost {
	h := &hostileHost{t: t, kind: "stdio", changed: make(chan struct{}, 1)}
	r := &proxyRun{t: t, cfgPath: filepath.Join(t.TempDir(), "mcp.json"), stderr: newNotifyingBuffer(), notes: make(chan struct{}, 1)}
	r.writeConfig(hostileConfig(t))
	cmd := cliCommand(t, "proxy", "--config", r.cfgPath, "--log-format", "json", "--log-level", "debug")
	cmd.Stderr = r.stderr
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "healthy-host", Version: "0"}, h.clientOptions()).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: e2eDeadline}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to the proxy: %v\nstderr:\n%s", err, r.stderr)
	}
	r.cs, r.cmd = cs, cmd
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", r.stderr)
		}
	})
	h.cs, h.stderr, h.pid = cs, r.stderr, cmd.Process.Pid
	h.sigterm = func(within time.Duration) {
		start := time.Now()
		if err := r.signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.stderr.waitFor(t, `"msg":"stopped"`)
		r.stop() // exit 0, no fixture left
		t.Logf("stdio: SIGTERM to exit %v", time.Since(start).Round(time.Millisecond))
		if d := time.Since(start); d > within {
			t.Errorf("SIGTERM to exit took %v, want at most %v", d, within)
		}
	}
	return h
}

// startHostileListen runs `mcpkeep proxy --listen` with the healthy host
// as one HTTP session.
func startHostileListen(t *testing.T) *hostileHost {
	h := &hostileHost{t: t, kind: "listen", changed: make(chan struct{}, 1)}
	r := startListen(t, hostileConfig(t), nil)
	proc := r.cmd.(*os.Process)
	cs, err := r.connectAs("healthy-host", h.clientOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs, h.stderr, h.pid = cs, r.stderr, proc.Pid
	h.sigterm = func(within time.Duration) {
		start := time.Now()
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-r.done:
			t.Logf("listen: SIGTERM to exit %v", time.Since(start).Round(time.Millisecond))
			r.done <- err // for startListen's cleanup: it checks the status and the children
		case <-time.After(within):
			t.Errorf("no exit within %v of SIGTERM", within)
		}
	}
	h.stalledHost("http://" + r.addr + "/mcp")
	return h
}

// stalledHost opens a legacy host session that asks for every log message
// and then holds its GET stream without reading it, until the test ends.
func (h *hostileHost) stalledHost(endpoint string) {
	t := h.t
	post := func(session, body string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		return http.DefaultClient.Do(req)
	}
	drain := func(resp *http.Response, err error) *http.Response {
		t.Helper()
		if err != nil {
			t.Fatalf("stalled host: %v", err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "data:") && resp.Header.Get("Content-Type") == "text/event-stream" {
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("stalled host: status %d", resp.StatusCode)
		}
		return resp
	}
	init := drain(post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stalled-host","version":"0"}}}`))
	session := init.Header.Get("Mcp-Session-Id")
	drain(post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	// silentlevel delays the answer (5 s at most): not waited for here.
	levelDone := make(chan struct{})
	go func() {
		defer close(levelDone)
		if resp, err := post(session, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() { <-levelDone })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("stalled host GET: %v", err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() }) // never read
}

// rssSampler records the largest VmRSS of pid until stopped.
type rssSampler struct {
	max  atomic.Int64 // bytes
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
						kb, _ := strconv.ParseInt(f[1], 10, 64)
						if kb<<10 > s.max.Load() {
							s.max.Store(kb << 10)
						}
					}
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) finish() int64 {
	close(s.stop)
	<-s.done
	return s.max.Load()
}

// TestHostilePeers is the suite; its two runs are parallel.
func TestHostilePeers(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to measure memory")
	}
	for _, kind := range []string{"stdio", "listen"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var h *hostileHost
			if kind == "stdio" {
				h = startHostileStdio(t)
			} else {
				h = startHostileListen(t)
			}
			rss := sampleRSS(h.pid)
			h.run()
			peak := rss.finish()
			t.Logf("%s: peak VmRSS %.1f MiB (bound %d MiB), %v before SIGTERM", kind, float64(peak)/(1<<20), hostileRSSBound>>20, time.Since(start).Round(time.Millisecond))
			if peak > hostileRSSBound {
				t.Errorf("the proxy's VmRSS reached %.1f MiB, over the bound of %d MiB", float64(peak)/(1<<20), hostileRSSBound>>20)
			}
			h.shutdownWithCallsInFlight()
		})
	}
}

func (h *hostileHost) run() {
	t := h.t
	phase := time.Now()
	lap := func(name string) {
		t.Logf("%s: %s took %v", h.kind, name, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}
	// The listings: the bad items and servers are left out, each named.
	h.waitLog("baduri", `"msg":"item refused"`, `::not a uri`)
	h.waitLog("endless", "", "more than MaxTools")
	h.waitLog("repeat", "", "repeats an earlier cursor")
	h.waitLog("silentlist", "", "connect timeout")
	names := h.tools()
	for _, want := range []string{"ok__echo", "bad__echo", "baduri__echo", "silentlevel__echo", "silentsub__echo"} {
		if !names[want] {
			t.Errorf("tools lack %s", want)
		}
	}
	for name := range names {
		for _, bad := range []string{"endless__", "repeat__", "silentlist__"} {
			if strings.HasPrefix(name, bad) {
				t.Errorf("tool %s of a refused server is exposed", name)
			}
		}
	}

	lap("listings")
	// A setLevel and a subscribe that one server never answers are
	// bounded, and delay nobody else.
	var bg sync.WaitGroup
	defer bg.Wait()
	bounded := func(what string, f func(ctx context.Context) error) {
		bg.Add(1)
		go func() {
			defer bg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
			defer cancel()
			start := time.Now()
			err := f(ctx)
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("%s took %v (%v): not bounded", what, d, err)
			}
		}()
	}
	bounded("logging/setLevel", func(ctx context.Context) error {
		return h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	})
	bounded("resources/subscribe", func(ctx context.Context) error {
		return h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fixture://static/counter"})
	})

	// A list_changed storm (2000 at 10k/s) and a flood of 1000 log
	// messages from bad, while the healthy host calls, gets progress and
	// hears a list_changed on time. bad's own pipe is what slows its
	// storm down: the proxy reads at its pace (a -race build takes
	// about 1000 a second), and bad's writes wait.
	bounded("storm", func(ctx context.Context) error {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad__storm", Arguments: map[string]any{"count": 2000, "rate": 10000}})
		return err
	})
	bounded("flood", func(ctx context.Context) error {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad__flood", Arguments: map[string]any{"count": 1000}})
		return err
	})
	h.healthy("during the storm and flood")
	bg.Wait()
	lap("storm and flood")

	// -32003 and -32004 are the server's answers: the call fails at once,
	// and the server stays.
	for _, code := range []int{-32003, -32004} {
		if _, isErr, err := h.call("bad__fail", map[string]any{"code": code}, 5*time.Second); err == nil && !isErr {
			t.Errorf("bad__fail %d succeeded", code)
		}
	}
	if n := h.logsFor(`"msg":"connection lost"`, "bad"); n != 0 {
		t.Errorf("bad lost its connection %d times after error answers, want 0", n)
	}

	lap("error codes")
	// A message past the 16 MiB frame limit ends bad's generation; bad
	// comes back, and ok never noticed.
	if _, isErr, err := h.call("bad__big", map[string]any{"bytes": 16<<20 + 1}, e2eDeadline); err == nil && !isErr {
		t.Error("a 16 MiB + 1 reply was relayed")
	}
	h.waitLog("bad", `"msg":"connection lost"`, "maximum line length")
	h.healthy("after the 16 MiB message")
	if text, _, err := h.call("bad__echo", map[string]any{"text": "back"}, e2eDeadline); err != nil || text != "back" {
		t.Errorf("bad after its 16 MiB message: %q %v", text, err)
	}

	lap("16 MiB message")
	// bad stops reading its stdin; a 256 KiB call to it stalls the pipe:
	// the generation ends at its connect timeout (1.5 s), and bad is back.
	if text, _, err := h.call("bad__deaf", nil, 5*time.Second); err != nil || text != "deaf" {
		t.Fatalf("bad__deaf: %q %v", text, err)
	}
	start := time.Now()
	_, _, err := h.call("bad__echo", map[string]any{"text": strings.Repeat("z", 256<<10)}, e2eDeadline)
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the call to a server that stopped reading returned after %v (%v)", d, err)
	}
	h.waitLog("bad", "stopped reading its stdin", "")
	h.healthy("after bad stopped reading")
	if text, _, err := h.call("bad__echo", map[string]any{"text": "again"}, e2eDeadline); err != nil || text != "again" {
		t.Errorf("bad after it stopped reading: %q %v", text, err)
	}
	lap("stopped reading")
}

// healthy checks that ok serves the healthy host on time: calls, a
// call's progress, and the list_changed of a prompt it adds.
func (h *hostileHost) healthy(when string) {
	t := h.t
	t.Helper()
	for i := range 5 {
		if text, _, err := h.call("ok__echo", map[string]any{"text": fmt.Sprint(i)}, 2*time.Second); err != nil || text != fmt.Sprint(i) {
			t.Errorf("%s: ok__echo %d: %q %v", when, i, text, err)
		}
	}
	before := h.progress.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok__slow", Arguments: map[string]any{"steps": 10, "ms": 5},
		Meta: mcp.Meta{"progressToken": "healthy-" + when}})
	if err != nil || res.IsError {
		t.Errorf("%s: ok__slow: %v", when, err)
	} else {
		// The host's SDK may run the last progress handler just after
		// the result is returned.
		deadline := time.Now().Add(2 * time.Second)
		for h.progress.Load()-before < 10 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := h.progress.Load() - before; got != 10 {
			t.Errorf("%s: %d progress notifications of ok__slow arrived, want 10", when, got)
		}
	}
	for len(h.changed) > 0 {
		<-h.changed
	}
	if _, _, err := h.call("ok__add-prompt", map[string]any{"name": "p-" + strings.ReplaceAll(when, " ", "-")}, 2*time.Second); err != nil {
		t.Errorf("%s: ok__add-prompt: %v", when, err)
	}
	select {
	case <-h.changed:
	case <-time.After(3 * time.Second):
		t.Errorf("%s: no prompts/list_changed within 3 s of ok__add-prompt", when)
	}
}

// shutdownWithCallsInFlight: SIGTERM while a healthy call hangs and a
// call to bad is in flight: exit 0 within 10 s, no child left.
func (h *hostileHost) shutdownWithCallsInFlight() {
	var wg sync.WaitGroup
	defer wg.Wait()
	before := h.progress.Load()
	for _, tool := range []string{"ok__slow", "bad__hang"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
			defer cancel()
			h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"steps": 1000, "ms": 50},
				Meta: mcp.Meta{"progressToken": "in-flight-" + tool}})
		}()
	}
	// ok's call is in flight once its first progress arrived.
	deadline := time.Now().Add(e2eDeadline)
	for h.progress.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	h.sigterm(10 * time.Second)
}

func (h *hostileHost) call(tool string, args any, within time.Duration) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return text(res), res.IsError, nil
}

func (h *hostileHost) tools() map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	res, err := h.cs.ListTools(ctx, nil)
	if err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
	}
	return names
}

// logLines are the proxy's JSON log lines about server that contain all
// of subs.
func (h *hostileHost) logLines(server string, subs ...string) []string {
	var out []string
	for _, line := range strings.Split(h.stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["server"] != server {
			continue
		}
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func (h *hostileHost) logsFor(sub, server string) int { return len(h.logLines(server, sub)) }

// waitLog waits for a log line about server containing msg and detail.
func (h *hostileHost) waitLog(server, msg, detail string) {
	h.t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for len(h.logLines(server, msg, detail)) == 0 {
		select {
		case <-h.stderr.wrote:
		case <-deadline.C:
			h.t.Fatalf("no log line about %s with %q and %q", server, msg, detail)
		}
	}
}
