package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const poolDeadline = 10 * time.Second

// memOpeners hands each new supervisor of a server a fresh scripted
// in-memory server, and remembers them all.
type memOpeners struct {
	mu     sync.Mutex
	mems   map[string][]*transport.Memory
	faults map[string]func(gen uint64) transport.Fault
}

func newMemOpeners() *memOpeners {
	return &memOpeners{mems: map[string][]*transport.Memory{}, faults: map[string]func(uint64) transport.Fault{}}
}

func (o *memOpeners) open(sc config.Server) (transport.Opener, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := transport.NewMemory("echo", "hang")
	m.Fault = o.faults[sc.Name]
	o.mems[sc.Name] = append(o.mems[sc.Name], m)
	return m, nil
}

func (o *memOpeners) last(name string) *transport.Memory {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.mems[name]
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

func (o *memOpeners) count(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.mems[name])
}

// fastPolicy retries at once, so tests wait for events, not delays.
var fastPolicy = backoff.Policy{Enabled: true, InitialDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond, MaxAttempts: 5}

func memServer(name string, args ...string) config.Server {
	return config.Server{Name: name, Transport: config.TransportStdio, Command: "mem", Args: args,
		Reconnect: fastPolicy, ConnectTimeout: poolDeadline}
}

func newTestPool(t *testing.T, o *memOpeners, opts PoolOptions) *Pool {
	t.Helper()
	opts.Opener = o.open
	p := NewPool(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
		defer cancel()
		if err := p.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	return p
}

func mustApply(t *testing.T, p *Pool, servers ...config.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	if err := p.Apply(ctx, &config.Config{Servers: servers}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// waitState waits until sup's snapshot satisfies ok.
func waitState(t *testing.T, sup *Supervisor, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.NewTimer(poolDeadline)
	defer deadline.Stop()
	for {
		ch := sup.Changed()
		if s := sup.State(); ok(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: not reached; state %+v", sup.Name(), sup.State())
		}
	}
}

func inState(st fsm.State) func(Snapshot) bool {
	return func(s Snapshot) bool { return s.State == st }
}

func publicNames(set *tools.Set) string {
	var names []string
	for _, t := range set.List() {
		names = append(names, t.PublicName)
	}
	return strings.Join(names, " ")
}

func sup(t *testing.T, p *Pool, name string) *Supervisor {
	t.Helper()
	s, ok := p.Supervisor(name)
	if !ok {
		t.Fatalf("no supervisor %q", name)
	}
	return s
}

func TestPoolApplyByDifference(t *testing.T) {
	o := newMemOpeners()
	p := newTestPool(t, o, PoolOptions{})
	set := p.Sink().(*tools.Set)
	mustApply(t, p, memServer("a"), memServer("b"), memServer("c"))
	if got := publicNames(set); got != "a__echo a__hang b__echo b__hang c__echo c__hang" {
		t.Fatalf("tools %q", got)
	}
	a1, b1, c1 := sup(t, p, "a"), sup(t, p, "b"), sup(t, p, "c")
	bMem := o.last("b")

	mustApply(t, p, memServer("a"), memServer("b", "--changed"), memServer("d"))

	if a := sup(t, p, "a"); a != a1 || a.State().State != fsm.Established || a.State().Gen != 1 || o.count("a") != 1 {
		t.Errorf("unchanged a was touched: same %v, state %+v, openers %d", a == a1, a.State(), o.count("a"))
	}
	if b := sup(t, p, "b"); b == b1 || o.count("b") != 2 {
		t.Errorf("changed b not restarted: same %v, openers %d", b == b1, o.count("b"))
	}
	if st := b1.State().State; st != fsm.Disposed || bMem.Live() != 0 {
		t.Errorf("old b: state %v, live generations %d", st, bMem.Live())
	}
	if _, ok := p.Supervisor("c"); ok || c1.State().State != fsm.Disposed {
		t.Errorf("removed c: still there %v, state %v", ok, c1.State().State)
	}
	if got := publicNames(set); got != "a__echo a__hang b__echo b__hang d__echo d__hang" {
		t.Errorf("tools %q", got)
	}
	// Start returns on the first attempt's outcome; the snapshot follows
	// a moment later.
	for _, n := range []string{"b", "d"} {
		waitState(t, sup(t, p, n), "established", inState(fsm.Established))
	}
	var names []string
	for _, s := range p.States() {
		names = append(names, s.Server+"="+s.State.String())
	}
	if got := strings.Join(names, " "); got != "a=established b=established d=established" {
		t.Errorf("States %q", got)
	}
}

func TestPoolCallRoutes(t *testing.T) {
	o := newMemOpeners()
	p := newTestPool(t, o, PoolOptions{})
	mustApply(t, p, memServer("a"), memServer("b"))
	ctx := context.Background()
	res, err := p.Call(ctx, "b__echo", json.RawMessage(`{"text":"hi"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(res); txt != "hi" {
		t.Errorf("echo %q", txt)
	}
	if _, err := p.Call(ctx, "zz__echo", nil, nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", res.Content[0])
}

func TestPoolCallFailsFastDuringOutage(t *testing.T) {
	o := newMemOpeners()
	p := newTestPool(t, o, PoolOptions{})
	slow := memServer("a")
	slow.Reconnect.InitialDelay, slow.Reconnect.MaxDelay = time.Hour, time.Hour
	mustApply(t, p, slow)
	o.last("a").Gen(1).Kill()
	waitState(t, sup(t, p, "a"), "backing-off", inState(fsm.BackingOff))

	start := time.Now()
	_, err := p.Call(context.Background(), "a__echo", nil, nil)
	var nc *NotConnectedError
	if !errors.As(err, &nc) || nc.Server != "a" || nc.State != fsm.BackingOff || nc.NextRetry.IsZero() {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("fail fast took %v", d)
	}
}

func TestPoolCallWaitsForReady(t *testing.T) {
	o := newMemOpeners()
	gate := make(chan struct{})
	o.faults["a"] = func(gen uint64) transport.Fault {
		if gen == 2 {
			return transport.Fault{Gate: gate}
		}
		return transport.Fault{}
	}
	p := newTestPool(t, o, PoolOptions{})
	sc := memServer("a")
	sc.WaitForReady = poolDeadline
	mustApply(t, p, sc)
	o.last("a").Gen(1).Kill()
	waitState(t, sup(t, p, "a"), "connecting gen 2", func(s Snapshot) bool { return s.State == fsm.Connecting && s.Gen == 2 })

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := p.Call(context.Background(), "a__echo", json.RawMessage(`{"text":"back"}`), nil)
		done <- result{res, err}
	}()
	close(gate)
	select {
	case r := <-done:
		if r.err != nil || resultText(r.res) != "back" {
			t.Errorf("call after recovery: %v %v", resultText(r.res), r.err)
		}
	case <-time.After(poolDeadline):
		t.Fatal("call did not return")
	}
}

func TestPoolWaitForReadyIsBounded(t *testing.T) {
	o := newMemOpeners()
	// The gate stays shut: Dispose cancels the held connect.
	gate := make(chan struct{})
	o.faults["a"] = func(gen uint64) transport.Fault {
		if gen == 2 {
			return transport.Fault{Gate: gate}
		}
		return transport.Fault{}
	}
	p := newTestPool(t, o, PoolOptions{})
	sc := memServer("a")
	sc.WaitForReady = 50 * time.Millisecond
	mustApply(t, p, sc)
	o.last("a").Gen(1).Kill()
	waitState(t, sup(t, p, "a"), "connecting gen 2", func(s Snapshot) bool { return s.State == fsm.Connecting && s.Gen == 2 })
	start := time.Now()
	_, err := p.Call(context.Background(), "a__echo", nil, nil)
	if !errors.Is(err, ErrNotConnected) {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > poolDeadline {
		t.Errorf("waited %v, want about 50ms", d)
	}
}

func TestPoolStrictStartupFailure(t *testing.T) {
	o := newMemOpeners()
	o.faults["bad"] = func(uint64) transport.Fault { return transport.Fault{OpenErr: errors.New("no such server")} }
	p := newTestPool(t, o, PoolOptions{})
	bad := memServer("bad")
	bad.FailOnStartupError = true
	err := p.Apply(context.Background(), &config.Config{Servers: []config.Server{memServer("good"), bad}})
	if err == nil || !strings.Contains(err.Error(), `server "bad"`) || !strings.Contains(err.Error(), "no such server") {
		t.Fatalf("Apply: %v", err)
	}
	if _, ok := p.Supervisor("bad"); ok {
		t.Error("a server whose strict startup failed is kept")
	}
	waitState(t, sup(t, p, "good"), "established", inState(fsm.Established))
	// The next Apply tries it again.
	o.faults["bad"] = nil
	mustApply(t, p, memServer("good"), bad)
	waitState(t, sup(t, p, "bad"), "established", inState(fsm.Established))
}

func TestPoolDispose(t *testing.T) {
	o := newMemOpeners()
	var mu sync.Mutex
	seen := map[string][]string{}
	p := NewPool(PoolOptions{Opener: o.open, Observer: func(tr Transition) {
		mu.Lock()
		seen[tr.Server] = append(seen[tr.Server], tr.From.String()+">"+tr.To.String())
		mu.Unlock()
	}})
	mustApply(t, p, memServer("a"), memServer("b"))
	a, b := sup(t, p, "a"), sup(t, p, "b")
	if err := p.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Supervisor{a, b} {
		if st := s.State().State; st != fsm.Disposed {
			t.Errorf("%s: %v", s.Name(), st)
		}
	}
	if got := publicNames(p.Sink().(*tools.Set)); got != "" {
		t.Errorf("tools left: %q", got)
	}
	if err := p.Apply(context.Background(), &config.Config{}); !errors.Is(err, ErrDisposed) {
		t.Errorf("Apply after Dispose: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"a", "b"} {
		got := strings.Join(seen[name], " ")
		if !strings.HasPrefix(got, "connecting>established") || !strings.HasSuffix(got, "draining>disposed") {
			t.Errorf("observer saw %s: %s", name, got)
		}
	}
}

// TestPoolStdioFixture runs a real fixture process from a parsed config
// and proves Dispose leaves no process behind.
func TestPoolStdioFixture(t *testing.T) {
	path, args, envMap := fixture.CommandEnv("normal")
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fx": map[string]any{"command": path, "args": args, "env": envMap},
	}})
	cfg, _, err := config.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pids []int
	p := NewPool(PoolOptions{Opener: func(sc config.Server) (transport.Opener, error) {
		op, err := sc.Opener(nil)
		return pidRecorder{op, func(pid int) { mu.Lock(); pids = append(pids, pid); mu.Unlock() }}, err
	}})
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	if err := p.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	res, err := p.Call(ctx, "fx__echo", map[string]any{"text": "real"}, nil)
	if err != nil || resultText(res) != "real" {
		t.Fatalf("echo: %q %v", resultText(res), err)
	}
	if err := p.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 1 {
		t.Fatalf("pids %v", pids)
	}
	if fixture.GroupAlive(pids[0]) {
		t.Errorf("process group %d still alive after Dispose", pids[0])
	}
}

// pidRecorder reports the pid of every stdio generation it opens.
type pidRecorder struct {
	transport.Opener
	pid func(int)
}

func (r pidRecorder) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	g, err := r.Opener.Open(ctx, gen)
	if p, ok := g.(interface{ Pid() int }); ok {
		r.pid(p.Pid())
	}
	return g, err
}

func (r pidRecorder) TerminationWindow() time.Duration {
	if w, ok := r.Opener.(interface{ TerminationWindow() time.Duration }); ok {
		return w.TerminationWindow()
	}
	return 0
}

// TestPoolHTTPServer runs a url server from a parsed config against a
// Streamable HTTP endpoint, headers and all.
func TestPoolHTTPServer(t *testing.T) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	var auth atomic.Value
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	defer func() {
		web.Close()
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	}()
	t.Setenv("MCPKEEP_TEST_TOKEN", "t0ken")
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"web": map[string]any{"url": web.URL, "headers": map[string]string{"Authorization": "Bearer ${MCPKEEP_TEST_TOKEN}"}},
	}})
	cfg, warns, err := config.Parse(raw, nil)
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	if sc := cfg.Servers[0]; sc.Transport != config.TransportHTTP || sc.Reconnect.Jitter != 0.5 || sc.Headers["Authorization"] != "Bearer ${MCPKEEP_TEST_TOKEN}" {
		t.Errorf("server config %+v", sc)
	}
	p := NewPool(PoolOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	if err := p.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	res, err := p.Call(ctx, "web__echo", map[string]any{"text": "over http"}, nil)
	if err != nil || resultText(res) != "over http" {
		t.Errorf("echo: %q %v", resultText(res), err)
	}
	if got, _ := auth.Load().(string); got != "Bearer t0ken" {
		t.Errorf("Authorization %q, want the expanded header", got)
	}
	if err := p.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
}
