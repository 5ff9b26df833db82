package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// e2eDeadline bounds every wait of the end-to-end tests.
const e2eDeadline = 20 * time.Second

// proxyRun is one `mcpkeep proxy` process driven by a real go-sdk client
// over its stdin and stdout.
type proxyRun struct {
	t       *testing.T
	cfgPath string
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	stderr  *notifyingBuffer
	changes atomic.Int32  // tools/list_changed received
	notes   chan struct{} // one token per list_changed (non-blocking)
	stopped bool
	exit    error
}

func startProxy(t *testing.T, cfg map[string]any, extra ...string) *proxyRun {
	t.Helper()
	r := &proxyRun{t: t, cfgPath: filepath.Join(t.TempDir(), "mcp.json"), stderr: newNotifyingBuffer(), notes: make(chan struct{}, 256)}
	r.writeConfig(cfg)
	args := append([]string{"proxy", "--config", r.cfgPath, "--log-format", "json", "--log-level", "debug"}, extra...)
	if !slices.Contains(extra, "--cache-dir") && !slices.Contains(extra, "--no-cache") {
		// Each run its own catalog cache: a test sees only its own runs.
		args = append(args, "--cache-dir", t.TempDir())
	}
	cmd := cliCommand(t, args...)
	cmd.Stderr = r.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			r.changes.Add(1)
			select {
			case r.notes <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: e2eDeadline}, nil)
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
	return r
}

func (r *proxyRun) writeConfig(cfg map[string]any) {
	r.t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.cfgPath, b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// stop closes the proxy's stdin (the host leaves) and checks that it
// exits 0 and that every fixture process it started is gone.
func (r *proxyRun) stop() {
	r.t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.exit = r.cs.Close() // CommandTransport: close stdin, wait for the exit
	if r.exit != nil || r.cmd.ProcessState == nil || r.cmd.ProcessState.ExitCode() != 0 {
		r.t.Errorf("proxy exit: %v (%v)", r.exit, r.cmd.ProcessState)
	}
	for _, pid := range r.pids() {
		if fixture.Alive(pid) {
			r.t.Errorf("fixture process %d outlived the proxy", pid)
		}
	}
}

var pidRE = regexp.MustCompile(`fixture: mode=\S+ pid=(\d+)`)

// pids are the fixture processes the proxy started (from their stderr,
// which the proxy logs at debug, also in stderr tails: deduplicated).
func (r *proxyRun) pids() []int {
	var out []int
	for _, m := range pidRE.FindAllStringSubmatch(r.stderr.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// waitPids returns the fixture processes seen once at least n are
// (bounded by e2eDeadline): a child's "pid=" line reaches the proxy's
// stderr through its stderr reader, which may log it after the call it
// served has been answered.
func (r *proxyRun) waitPids(n int) []int {
	r.t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := r.pids()
		if len(pids) >= n || time.Now().After(deadline) {
			return pids
		}
		<-tick.C
	}
}

// waitPidLine waits (bounded by e2eDeadline) until the fixture process
// pid has logged its "pid=" line through the proxy's stderr.
func (r *proxyRun) waitPidLine(pid int) {
	deadline := time.Now().Add(e2eDeadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !slices.Contains(r.pids(), pid) && time.Now().Before(deadline) {
		<-tick.C
	}
}

func (r *proxyRun) toolNames() []string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	res, err := r.cs.ListTools(ctx, nil)
	if err != nil {
		r.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// waitTools waits, list_changed by list_changed, until the host's tool
// list satisfies ok.
func (r *proxyRun) waitTools(what string, ok func(names []string) bool) []string {
	r.t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for {
		names := r.toolNames()
		if ok(names) {
			return names
		}
		select {
		case <-r.notes:
		case <-deadline.C:
			r.t.Fatalf("tool list never %s; last %v", what, names)
		}
	}
}

// waitChanges waits until at least n list_changed arrived.
func (r *proxyRun) waitChanges(n int32) {
	r.t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for r.changes.Load() < n {
		select {
		case <-r.notes:
		case <-deadline.C:
			r.t.Fatalf("%d list_changed received, want %d", r.changes.Load(), n)
		}
	}
}

func (r *proxyRun) call(name string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	return r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// logs returns the proxy's JSON log records with message msg.
func (r *proxyRun) logs(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(r.stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func (r *proxyRun) logsFor(msg, server string) int {
	n := 0
	for _, rec := range r.logs(msg) {
		if rec["server"] == server {
			n++
		}
	}
	return n
}

func has(names []string, prefix string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestProxyCrashRecovery: a crashed server is respawned, calls succeed
// again, and the host hears no list_changed for its unchanged list.
func TestProxyCrashRecovery(t *testing.T) {
	t.Parallel()
	fx := fixtureServer(t, "normal")
	fx["waitForReadyMs"] = 10000
	tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
	r := startProxy(t, map[string]any{
		"reconnect":  map[string]any{"initialDelayMs": 50, "maxDelayMs": 1000, "maxAttempts": 5},
		"mcpServers": map[string]any{"fx": fx, "sentinel": fixtureServer(t, "normal")},
	}, "--trace", tracePath)

	if caps := r.cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities %+v: tools.listChanged not advertised", caps)
	}
	want := append(prefixed("fx", fixtureTools), prefixed("sentinel", fixtureTools)...)
	if got := r.toolNames(); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}

	// die exits without replying: the call in flight fails, never replayed.
	res, err := r.call("fx__die", nil)
	if err != nil || !res.IsError {
		t.Fatalf("die: %v %+v", err, res)
	}
	// waitForReadyMs lets the next call wait for the respawn.
	res, err = r.call("fx__echo", map[string]any{"text": "back"})
	if err != nil || res.IsError || text(res) != "back" {
		t.Fatalf("echo after the crash: %v %q", err, text(res))
	}
	// The held call is answered as soon as fx is established again; the
	// loop's "recovered" line may reach stderr just after that answer.
	r.stderr.waitFor(t, `"msg":"recovered"`)
	if r.logsFor("recovered", "fx") != 1 {
		t.Errorf("%d recovered logs for fx, want 1", r.logsFor("recovered", "fx"))
	}

	// The sentinel's list does change, so a list_changed follows it; the
	// crash's (there must be none) would have been sent before it.
	if _, err := r.call("sentinel__grow", nil); err != nil {
		t.Fatal(err)
	}
	r.waitTools("shows sentinel__extra", func(n []string) bool { return slices.Contains(n, "sentinel__extra") })
	r.waitChanges(1)
	if n := r.changes.Load(); n != 1 {
		t.Errorf("%d list_changed, want 1 (the sentinel's): the recovery of an unchanged list was announced", n)
	}
	// The proxy touched fx's upstream tools once: at startup.
	if n := r.logsFor("tools changed", "fx"); n != 1 {
		t.Errorf("fx's upstream tools changed %d times, want 1", n)
	}

	r.stop()
	if pids := r.pids(); len(pids) != 3 {
		t.Errorf("fixture pids %v, want 3 (fx twice, sentinel once)", pids)
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := trace.Check(f); err != nil {
		t.Errorf("the trace does not replay: %v", err)
	}
}

// TestProxyExhaustion: a crash loop spends the budget; the server's tools
// disappear with one list_changed, and SIGHUP gives it a fresh budget.
func TestProxyExhaustion(t *testing.T) {
	t.Parallel()
	loop := fixtureServer(t, "exit-after=0") // every connect succeeds, then dies at once
	loop["reconnect"] = map[string]any{"initialDelayMs": 400, "maxDelayMs": 400, "maxAttempts": 2}
	r := startProxy(t, map[string]any{"mcpServers": map[string]any{"loop": loop, "keep": fixtureServer(t, "normal")}})

	if names := r.toolNames(); !has(names, "loop__") {
		t.Fatalf("tools %v: loop's first connection registered nothing", names)
	}
	names := r.waitTools("loses loop's tools", func(n []string) bool { return !has(n, "loop__") })
	if !has(names, "keep__echo") {
		t.Errorf("tools %v: keep's tools went too", names)
	}
	r.waitChanges(1)
	if n := r.logsFor("gave up", "loop"); n != 1 {
		t.Errorf("%d gave up logs for loop, want 1", n)
	}
	if _, err := r.call("loop__echo", nil); err == nil {
		t.Error("a call to a tool of an exhausted server succeeded")
	}

	// SIGHUP with an unchanged config: the exhausted server is retried.
	before := len(r.pids())
	if err := r.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.stderr.waitFor(t, `"msg":"manual reconnect"`)
	r.stderr.waitFor(t, `"msg":"reloaded"`)
	// Wait for the new fixture to say it started before stopping: a
	// generation stopped before it served is killed at once (no stdin
	// grace), possibly before it writes its first line.
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for len(r.pids()) <= before {
		select {
		case <-r.stderr.wrote:
		case <-deadline.C:
			t.Fatalf("no fixture started after SIGHUP (%d before, %d after)", before, len(r.pids()))
		}
	}
	r.stop()
}

// TestProxyReload: SIGHUP applies the edited config by difference; the
// unchanged server keeps its process.
func TestProxyReload(t *testing.T) {
	t.Parallel()
	a := fixtureServer(t, "normal")
	r := startProxy(t, map[string]any{"mcpServers": map[string]any{"a": a, "b": fixtureServer(t, "normal")}})
	if names := r.toolNames(); !has(names, "a__") || !has(names, "b__") {
		t.Fatalf("tools %v", names)
	}
	r.writeConfig(map[string]any{"mcpServers": map[string]any{"a": a, "c": fixtureServer(t, "normal")}})
	if err := r.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The whole of c: the SDK announces its tools 10 ms after the last
	// AddTool, so on a loaded machine a host may list c half added and
	// hear list_changed again when the rest is in (docs/design.md §18).
	names := r.waitTools("becomes a and c", func(n []string) bool {
		return has(n, "a__") && has(n, "c__") && !has(n, "b__") && len(n) == 2*len(fixtureTools)
	})
	if len(names) != 2*len(fixtureTools) {
		t.Errorf("tools %v", names)
	}
	if n := r.logsFor("tools changed", "a"); n != 1 {
		t.Errorf("a's tools changed %d times, want 1: the unchanged server was touched", n)
	}
	if n := strings.Count(r.stderr.String(), `"server":"a"`+`,"gen":1,"line":"fixture: mode=normal`); n != 1 {
		t.Errorf("a started %d processes, want 1", n)
	}

	// SIGTERM: the proxy disposes everything and exits 0.
	if err := r.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.stderr.waitFor(t, `"msg":"stopped"`)
	r.stop()
}

func (r *proxyRun) signal(sig os.Signal) error { return r.cmd.Process.Signal(sig) }

// notifyingBuffer is the proxy's stderr: safe for concurrent use, with a
// wakeup on every write so tests wait for a log line without polling.
type notifyingBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newNotifyingBuffer() *notifyingBuffer {
	return &notifyingBuffer{wrote: make(chan struct{}, 1)}
}

func (b *notifyingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *notifyingBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *notifyingBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.wrote:
		case <-deadline.C:
			t.Fatalf("the proxy never logged %s", s)
		}
	}
}

// fixtureTools are the tools of the fixture in every mode but exit-after=0.
var fixtureTools = []string{"add-prompt", "add-resource", "big", "bump", "cancelled", "crash", "deaf", "die", "echo", "elicit",
	"fail", "flood", "grow", "hang", "log", "log-all", "meta", "roots", "roots-changed", "sample", "slow", "storm", "subscriptions"}

// prefixed returns server's public names of tools, sorted.
func prefixed(server string, tools []string) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = server + "__" + t
	}
	slices.Sort(out)
	return out
}
