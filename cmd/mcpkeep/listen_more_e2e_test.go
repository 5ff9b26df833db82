package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/opstest"
	"github.com/mcpkeep/mcpkeep/proxy"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectAs is r.connect with client options (handlers) and a name.
func (r *listenRun) connectAs(name string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0"}, opts)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.addr + "/mcp", MaxRetries: -1}, nil)
}

// callText calls tool with args and returns the first text content, and
// whether the result is a tool error.
func callText(cs *mcp.ClientSession, tool string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return text, res.IsError, nil
}

// stateOf is server's state in a /readyz reply ("" when absent).
func stateOf(rep proxy.Readiness, server string) string {
	for _, s := range rep.Servers {
		if s.Server == server {
			return s.State
		}
	}
	return ""
}

// waitReadyz polls /readyz until ok holds for the reply (at most
// e2eDeadline, every interval) and returns that reply.
func (r *listenRun) waitReadyz(t *testing.T, what string, interval time.Duration, ok func(code int, rep proxy.Readiness) bool) proxy.Readiness {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	var code int
	var rep proxy.Readiness
	for {
		code, rep = opstest.Readyz(t, "http://"+r.addr)
		if ok(code, rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz still %d %+v after %v", what, code, rep, e2eDeadline)
		}
		time.Sleep(interval)
	}
}

// sumCounter sums the counter samples of name whose labels include want.
func sumCounter(t *testing.T, base, name string, want map[string]string) float64 {
	t.Helper()
	total := 0.0
	for _, s := range opstest.Samples(opstest.Scrape(t, base), name) {
		if opstest.Matches(s.Labels, want) && s.M.Counter != nil {
			total += s.M.Counter.GetValue()
		}
	}
	return total
}

// TestListenCrashSeenByBothSessions: one server's crash, caused from one
// host session, is an outage for both sessions, and both are served again
// once the supervisor reconnected.
func TestListenCrashSeenByBothSessions(t *testing.T) {
	t.Parallel()
	a := fixtureServer(t, "normal")
	// A visible outage window: the first retry comes 400 ms after the crash.
	a["reconnect"] = map[string]any{"initialDelayMs": 400, "maxDelayMs": 400, "maxAttempts": 5, "jitter": 0}
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"a": a, "b": fixtureServer(t, "normal")}}, nil)

	var sessions [2]*mcp.ClientSession
	for i := range sessions {
		cs, err := r.connectAs(fmt.Sprintf("host-%d", i+1), nil)
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	r.waitReadyz(t, "ready before the crash", 20*time.Millisecond, func(code int, rep proxy.Readiness) bool {
		return code == http.StatusOK && stateOf(rep, "a") == "established"
	})
	for i, cs := range sessions {
		if text, isErr, err := callText(cs, "a__echo", map[string]any{"text": "before"}); err != nil || isErr || text != "before" {
			t.Fatalf("session %d before the crash: %q %v %v", i+1, text, isErr, err)
		}
	}

	// Session 1 kills a's fixture; the call itself cannot succeed.
	text, isErr, err := callText(sessions[0], "a__die", nil)
	if err == nil && !isErr {
		t.Fatalf("a__die succeeded: %q", text)
	}
	t.Logf("a__die: %q (tool error %v) %v", text, isErr, err)

	// Both sessions see the outage, at once: a's calls fail with the
	// not-connected text (or wait for the reconnection), b's are served.
	var wg sync.WaitGroup
	outage := make([]string, len(sessions))
	errs := make(chan error, 4*len(sessions))
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if text, isErr, err := callText(cs, "b__echo", map[string]any{"text": "b"}); err != nil || isErr || text != "b" {
				errs <- fmt.Errorf("session %d: b during a's outage: %q %v %v", i+1, text, isErr, err)
			}
			start := time.Now()
			text, isErr, err := callText(cs, "a__echo", map[string]any{"text": "during"})
			switch {
			case err != nil:
				errs <- fmt.Errorf("session %d: a during the outage: %v", i+1, err)
			case isErr && !strings.Contains(text, `server "a" is not connected`):
				errs <- fmt.Errorf("session %d: a during the outage: tool error %q, want the not-connected text", i+1, text)
			case isErr:
				outage[i] = "failed: " + text
			case text != "during":
				errs <- fmt.Errorf("session %d: a during the outage echoed %q", i+1, text)
			default:
				outage[i] = fmt.Sprintf("waited %v, then served", time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	wg.Wait()
	for i, o := range outage {
		t.Logf("session %d saw a's outage: %s", i+1, o)
	}

	// After the recovery both are served again.
	rep := r.waitReadyz(t, "a established again", 20*time.Millisecond, func(code int, rep proxy.Readiness) bool {
		return code == http.StatusOK && stateOf(rep, "a") == "established"
	})
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(e2eDeadline)
			for {
				want := fmt.Sprintf("after-%d", i+1)
				text, isErr, err := callText(cs, "a__echo", map[string]any{"text": want})
				if err == nil && !isErr && text == want {
					return
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("session %d after the recovery: %q %v %v", i+1, text, isErr, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(rep.Servers) != 2 {
		t.Errorf("/readyz servers %+v, want a and b", rep.Servers)
	}
	// The metrics saw the loss and the second establishment.
	base := "http://" + r.addr
	if n := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "a", "to": "established"}); n < 2 {
		t.Errorf("a was established %v times, want ≥ 2", n)
	}
	if n := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "a", "event": "closed"}); n < 1 {
		t.Errorf("a's closed transitions %v, want ≥ 1", n)
	}
}

// TestListenReadyzFlipsAndSIGHUP: a crash loop spends its budget and
// /readyz turns 503 naming the server exhausted; SIGHUP (the manual
// reconnect) retries it, and the metrics count what happened.
func TestListenReadyzFlipsAndSIGHUP(t *testing.T) {
	t.Parallel()
	loop := fixtureServer(t, "exit-after=0") // connects, then dies at once
	loop["reconnect"] = map[string]any{"initialDelayMs": 50, "maxDelayMs": 50, "maxAttempts": 1, "jitter": 0}
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"loop": loop, "keep": fixtureServer(t, "normal")}}, nil)
	base := "http://" + r.addr

	// The servers start at the first host's initialize.
	cs, err := r.connectAs("host-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// keep is waited for too: its first connect may end after loop's
	// budget did (a loaded machine; or keep listed from a catalog cache,
	// when Start does not wait for it, docs/design.md §20).
	rep := r.waitReadyz(t, "loop exhausted, keep established", 20*time.Millisecond, func(code int, rep proxy.Readiness) bool {
		return code == http.StatusServiceUnavailable && stateOf(rep, "loop") == "exhausted" && stateOf(rep, "keep") == "established"
	})
	if !strings.Contains(rep.Reason, "loop is exhausted") || rep.Ready {
		t.Errorf("/readyz %+v: the reason does not name loop exhausted", rep)
	}
	if st := stateOf(rep, "keep"); st != "established" {
		t.Errorf("keep is %q while loop is exhausted", st)
	}
	closedBefore := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "loop", "event": "closed"})

	// SIGHUP: loop gets a fresh budget, so /readyz shows it retried.
	p, ok := r.cmd.(*os.Process)
	if !ok {
		t.Fatalf("r.cmd is %T, not *os.Process", r.cmd)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var seen []string
	r.waitReadyz(t, "loop retried after SIGHUP", 2*time.Millisecond, func(code int, rep proxy.Readiness) bool {
		st := stateOf(rep, "loop")
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		return st != "exhausted" && st != ""
	})
	t.Logf("loop's states seen after SIGHUP: %v", seen)
	r.stderr.waitFor(t, `"msg":"manual reconnect"`)
	// The crash loop goes on: loop is exhausted again, and not ready.
	r.waitReadyz(t, "loop exhausted again", 20*time.Millisecond, func(code int, rep proxy.Readiness) bool {
		return code == http.StatusServiceUnavailable && stateOf(rep, "loop") == "exhausted"
	})

	closed := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "loop", "event": "closed"})
	reconnects := sumCounter(t, base, "mcpkeep_reconnects_total", map[string]string{"server": "loop"})
	manual := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "loop", "event": "reconnect"})
	t.Logf("loop: closed %v (%v before SIGHUP), reconnects %v, manual reconnects %v", closed, closedBefore, reconnects, manual)
	if closed < 1 || closedBefore < 1 {
		t.Errorf("mcpkeep_transitions_total{server=loop,event=closed} = %v (%v before SIGHUP), want ≥ 1", closed, closedBefore)
	}
	if closed <= closedBefore {
		t.Errorf("no closed transition after SIGHUP (%v before, %v after)", closedBefore, closed)
	}
	if reconnects < 1 {
		t.Errorf("mcpkeep_reconnects_total{server=loop} = %v, want ≥ 1", reconnects)
	}
	if manual < 1 {
		t.Errorf("mcpkeep_transitions_total{server=loop,event=reconnect} = %v after SIGHUP, want ≥ 1", manual)
	}
	if n := sumCounter(t, base, "mcpkeep_transitions_total", map[string]string{"server": "keep", "event": "closed"}); n != 0 {
		t.Errorf("keep closed %v times", n)
	}
}

// TestListenServerRequestGoesToTheCallingSession: a server's sampling
// request made during a call goes to the session that made the call, not
// to the other one.
func TestListenServerRequestGoesToTheCallingSession(t *testing.T) {
	t.Parallel()
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"a": fixtureServer(t, "normal")}}, nil)

	var calls [2]atomic.Int32
	var sessions [2]*mcp.ClientSession
	for i := range sessions {
		name := fmt.Sprintf("host-%d", i+1)
		cs, err := r.connectAs(name, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				calls[i].Add(1)
				return &mcp.CreateMessageResult{Model: name, Role: "assistant", Content: &mcp.TextContent{Text: name}}, nil
			},
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}

	text, isErr, err := callText(sessions[1], "a__sample", map[string]any{"prompt": "who?"})
	if err != nil || isErr || text != "host-2" {
		t.Errorf("session 2's a__sample: %q (tool error %v) %v, want host-2", text, isErr, err)
	}
	if n := calls[0].Load(); n != 0 {
		t.Errorf("session 1's handler was called %d times for session 2's call", n)
	}
	if n := calls[1].Load(); n != 1 {
		t.Errorf("session 2's handler was called %d times, want 1", n)
	}

	text, isErr, err = callText(sessions[0], "a__sample", map[string]any{"prompt": "who?"})
	if err != nil || isErr || text != "host-1" {
		t.Errorf("session 1's a__sample: %q (tool error %v) %v, want host-1", text, isErr, err)
	}
	if n := calls[0].Load(); n != 1 {
		t.Errorf("session 1's handler was called %d times, want 1", n)
	}
	if n := calls[1].Load(); n != 1 {
		t.Errorf("session 2's handler was called %d times in all, want 1", n)
	}
}

// vmRSS is the resident set of process pid in KiB, from /proc.
func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestListenNumbers measures (and logs) what issue 17's closing note
// reports: sessions served at once, memory per session, time to
// readiness. It asserts only loose sanity bounds.
func TestListenNumbers(t *testing.T) {
	t.Parallel()
	const n = 20
	start := time.Now()
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"a": fixtureServer(t, "normal")}}, nil)
	listening := time.Since(start)
	p, ok := r.cmd.(*os.Process)
	if !ok {
		t.Fatalf("r.cmd is %T, not *os.Process", r.cmd)
	}

	// The servers start at the first initialize: one host, then readiness.
	first, err := r.connectAs("host-0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	r.waitReadyz(t, "ready", 5*time.Millisecond, func(code int, _ proxy.Readiness) bool { return code == http.StatusOK })
	ready := time.Since(start)
	if text, isErr, err := callText(first, "a__echo", map[string]any{"text": "warm"}); err != nil || isErr || text != "warm" {
		t.Fatalf("warm-up echo: %q %v %v", text, isErr, err)
	}
	before := vmRSS(t, p.Pid)

	// n sessions at once, each initialize + one echo, all held open until
	// every one has been served.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		served   int
		open     int
		maxOpen  int
		slowest  time.Duration
		failures []error
	)
	release := make(chan struct{})
	var done sync.WaitGroup
	burst := time.Now()
	for i := range n {
		wg.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			t0 := time.Now()
			cs, err := r.connectAs(fmt.Sprintf("host-%d", i+1), nil)
			if err != nil {
				mu.Lock()
				failures = append(failures, fmt.Errorf("session %d: connect: %v", i+1, err))
				mu.Unlock()
				wg.Done()
				return
			}
			defer cs.Close()
			mu.Lock()
			open++
			maxOpen = max(maxOpen, open)
			mu.Unlock()
			want := fmt.Sprintf("s%d", i+1)
			text, isErr, err := callText(cs, "a__echo", map[string]any{"text": want})
			mu.Lock()
			if err != nil || isErr || text != want {
				failures = append(failures, fmt.Errorf("session %d: echo %q %v %v", i+1, text, isErr, err))
			} else {
				served++
				slowest = max(slowest, time.Since(t0))
			}
			mu.Unlock()
			wg.Done()
			select {
			case <-release:
			case <-time.After(e2eDeadline):
			}
			mu.Lock()
			open--
			mu.Unlock()
		}()
	}
	wg.Wait()
	burstTime := time.Since(burst)
	after := vmRSS(t, p.Pid)
	mu.Lock()
	held := open
	mu.Unlock()
	close(release)
	done.Wait()

	for _, err := range failures {
		t.Error(err)
	}
	perSession := float64(after-before) / n
	t.Logf("sessions: %d of %d served, %d open at once (plus the first host); burst %v, slowest initialize+echo %v",
		served, n, held, burstTime.Round(time.Millisecond), slowest.Round(time.Millisecond))
	t.Logf("RSS: %d KiB before, %d KiB with %d sessions open: %.1f KiB per session", before, after, held, perSession)
	t.Logf("time from process start: listening %v, /readyz 200 %v (first host connected in between)",
		listening.Round(time.Millisecond), ready.Round(time.Millisecond))
	if served != n || held != n || maxOpen != n {
		t.Errorf("%d served, %d held open, %d at most open; want %d each", served, held, maxOpen, n)
	}
	if perSession > 4096 {
		t.Errorf("%.1f KiB of RSS per session: more than 4 MiB", perSession)
	}
	if ready > e2eDeadline {
		t.Errorf("ready after %v", ready)
	}
}
