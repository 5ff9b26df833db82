package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/opstest"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
)

// opsDeadline bounds every wait of the ops tests.
const opsDeadline = 10 * time.Second

// opsRecorder keeps every transition, after ops has seen it (it is
// subscribed behind ops's observer), so the tests can wait for events and
// count what happened.
type opsRecorder struct {
	mu      sync.Mutex
	list    []mcpkeep.Transition
	changed chan struct{}
}

func newOpsRecorder() *opsRecorder { return &opsRecorder{changed: make(chan struct{})} }

func (r *opsRecorder) observe(t mcpkeep.Transition) {
	r.mu.Lock()
	r.list = append(r.list, t)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *opsRecorder) all() []mcpkeep.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

// count counts the transitions that match.
func (r *opsRecorder) count(match func(mcpkeep.Transition) bool) int {
	n := 0
	for _, t := range r.all() {
		if match(t) {
			n++
		}
	}
	return n
}

// waitCount waits until at least n recorded transitions match.
func (r *opsRecorder) waitCount(t *testing.T, what string, n int, match func(mcpkeep.Transition) bool) {
	t.Helper()
	deadline := time.NewTimer(opsDeadline)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ch, got := r.changed, 0
		for _, tr := range r.list {
			if match(tr) {
				got++
			}
		}
		r.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			var seen []string
			for _, tr := range r.all() {
				seen = append(seen, fmt.Sprintf("%s %s-%s->%s", tr.Server, tr.From, tr.Event, tr.To))
			}
			t.Fatalf("%s: %d of %d transitions after %v; seen:\n%s", what, got, n, opsDeadline, strings.Join(seen, "\n"))
		}
	}
}

// into matches the transitions of server that enter state to (not the
// internal ones, such as stable, that stay in it).
func into(server string, to fsm.State) func(mcpkeep.Transition) bool {
	return func(t mcpkeep.Transition) bool { return t.Server == server && t.To == to && t.From != to }
}

func byEvent(server string, ev fsm.Event) func(mcpkeep.Transition) bool {
	return func(t mcpkeep.Transition) bool { return t.Server == server && t.Event == ev }
}

func isReconnect(server string) func(mcpkeep.Transition) bool {
	return func(t mcpkeep.Transition) bool {
		return t.Server == server && t.To == fsm.Connecting && (t.Event == fsm.RetryDue || t.Event == fsm.Reconnect)
	}
}

// opsBench is a real Pool over in-memory servers, ops subscribed to it and
// its handler on an httptest server.
type opsBench struct {
	ops    *Registry
	health *proxy.Health
	pool   *mcpkeep.Pool
	rec    *opsRecorder
	srv    *httptest.Server

	mu      sync.Mutex
	mems    map[string]*transport.Memory
	refuse  map[string]*atomic.Bool  // the server's next generations fail to open
	entered map[string]chan struct{} // a call of "block" reached the server
}

const opsConfig = `{
  "reconnect": {"initialDelayMs": 1, "maxDelayMs": 20, "maxAttempts": 2, "jitter": 0, "stabilityWindowMs": 20},
  "mcpServers": {
    "a": {"command": "mem-a"},
    "b": {"command": "mem-b"}
  }
}`

func newOpsBench(t *testing.T) (*opsBench, *config.Config) {
	t.Helper()
	cfg, _, err := config.Parse([]byte(opsConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &opsBench{ops: New(nil), health: proxy.NewHealth(), rec: newOpsRecorder(),
		mems: map[string]*transport.Memory{}, refuse: map[string]*atomic.Bool{}, entered: map[string]chan struct{}{}}
	for _, sc := range cfg.Servers {
		b.refuse[sc.Name] = new(atomic.Bool)
		b.entered[sc.Name] = make(chan struct{}, 16)
	}
	b.pool = mcpkeep.NewPool(mcpkeep.PoolOptions{
		Opener:   b.open,
		Observer: mcpkeep.Observers(b.ops.Observer(), b.health.Observer(), nil, b.rec.observe),
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opsDeadline)
		defer cancel()
		if err := b.pool.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	b.srv = httptest.NewServer(opsMux(b.ops, b.health, func() *mcpkeep.Pool { return b.pool }))
	t.Cleanup(b.srv.Close)
	return b, cfg
}

// open gives each server an in-memory server with echo, hang and block
// (which reports its call, then holds it until cancelled).
func (b *opsBench) open(sc config.Server) (transport.Opener, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := transport.NewMemory("echo", "hang")
	refuse, entered := b.refuse[sc.Name], b.entered[sc.Name]
	m.Fault = func(uint64) transport.Fault {
		if refuse.Load() {
			return transport.Fault{OpenErr: errors.New("scripted: refused")}
		}
		return transport.Fault{}
	}
	m.Serve = func(_ uint64, s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	}
	b.mems[sc.Name] = m
	return m, nil
}

func (b *opsBench) mem(name string) *transport.Memory {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mems[name]
}

func (b *opsBench) sup(t *testing.T, name string) *mcpkeep.Supervisor {
	t.Helper()
	s, ok := b.pool.Supervisor(name)
	if !ok {
		t.Fatalf("no supervisor %q", name)
	}
	return s
}

// call calls tool on server through its supervisor, reported to ops as
// the proxy does, and returns the result label it should count.
func (b *opsBench) call(t *testing.T, server, tool string) string {
	t.Helper()
	return b.callSup(b.sup(t, server), tool)
}

// callSup is call for a goroutine (no testing.T).
func (b *opsBench) callSup(sup *mcpkeep.Supervisor, tool string) string {
	ctx, cancel := context.WithTimeout(context.Background(), opsDeadline)
	defer cancel()
	start := time.Now()
	_, err := sup.Call(ctx, tool, map[string]any{"text": "x"}, nil)
	b.ops.Request(sup.Name(), "tools/call", time.Since(start), err)
	return Result(err)
}

func opsGet(t *testing.T, base, path string) (int, string) { return opstest.Get(t, base, path) }

func readyz(t *testing.T, base string) (int, proxy.Readiness) { return opstest.Readyz(t, base) }

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily { return opstest.Scrape(t, base) }

func samples(fams map[string]*dto.MetricFamily, name string) []opstest.Sample {
	return opstest.Samples(fams, name)
}

// value is the counter or gauge value of the sample of name whose labels
// include want (0 when there is none).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	for _, s := range samples(fams, name) {
		if opstest.Matches(s.Labels, want) {
			switch {
			case s.M.Counter != nil:
				return s.M.Counter.GetValue()
			case s.M.Gauge != nil:
				return s.M.Gauge.GetValue()
			}
			t.Fatalf("%s%v is neither a counter nor a gauge", name, want)
		}
	}
	return 0
}

// histCount is the sample count of the histogram of name with labels want.
func histCount(fams map[string]*dto.MetricFamily, name string, want map[string]string) uint64 {
	for _, s := range samples(fams, name) {
		if opstest.Matches(s.Labels, want) && s.M.Histogram != nil {
			return s.M.Histogram.GetSampleCount()
		}
	}
	return 0
}

// quietScrape scrapes while no transition happens, so the counters and the
// recorded transitions describe the same moment (stable timers fire on
// their own).
func quietScrape(t *testing.T, b *opsBench) (map[string]*dto.MetricFamily, []mcpkeep.Transition) {
	t.Helper()
	deadline := time.Now().Add(opsDeadline)
	for {
		before := b.rec.all()
		fams := scrape(t, b.srv.URL)
		if after := b.rec.all(); len(after) == len(before) {
			return fams, after
		}
		if time.Now().After(deadline) {
			t.Fatalf("transitions kept coming for %v", opsDeadline)
		}
	}
}

// checkTransitionCounters: mcpkeep_transitions_total is exactly the
// multiset of recorded (server, event, to).
func checkTransitionCounters(t *testing.T, fams map[string]*dto.MetricFamily, recorded []mcpkeep.Transition) {
	t.Helper()
	want := map[[3]string]float64{}
	for _, tr := range recorded {
		want[[3]string{tr.Server, tr.Event.String(), tr.To.String()}]++
	}
	got := map[[3]string]float64{}
	for _, s := range samples(fams, "mcpkeep_transitions_total") {
		got[[3]string{s.Labels["server"], s.Labels["event"], s.Labels["to"]}] = s.M.Counter.GetValue()
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("transitions_total{server=%q,event=%q,to=%q} = %v, %v happened", k[0], k[1], k[2], got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("transitions_total{server=%q,event=%q,to=%q} = %v, none happened", k[0], k[1], k[2], n)
		}
	}
}

// checkStateGauge: 1 for server's state, 0 for every other state.
func checkStateGauge(t *testing.T, fams map[string]*dto.MetricFamily, server string, state fsm.State) {
	t.Helper()
	for _, st := range fsm.States {
		want := 0.0
		if st == state {
			want = 1
		}
		if got := value(t, fams, "mcpkeep_server_state", map[string]string{"server": server, "state": st.String()}); got != want {
			t.Errorf("server_state{server=%q,state=%q} = %v, want %v", server, st, got, want)
		}
	}
}

// TestOpsFollowsAPool drives ops with a real pool: crashes, a call lost
// in flight, an exhaustion and a manual reconnect; /readyz, status and
// /metrics follow, and the counters match the transitions that happened.
func TestOpsFollowsAPool(t *testing.T) {
	b, cfg := newOpsBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), opsDeadline)
	defer cancel()
	if err := b.pool.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	b.rec.waitCount(t, "a established", 1, into("a", fsm.Established))
	b.rec.waitCount(t, "b established", 1, into("b", fsm.Established))
	if code, rep := readyz(t, b.srv.URL); code != http.StatusOK || !rep.Ready || len(rep.Servers) != 2 {
		t.Fatalf("/readyz after start: %d %+v", code, rep)
	}

	// Requests of every result.
	results := map[[2]string]int{} // {server, result}
	results[[2]string{"a", b.call(t, "a", "echo")}]++
	results[[2]string{"a", b.call(t, "a", "no-such-tool")}]++

	// Two crashes of a, each followed by its recovery. Each crash waits
	// for the generation's stable event (its stability window is 20ms),
	// which resets the budget: every crash costs one retry.
	kills := 0
	for gen := uint64(1); gen <= 2; gen++ {
		b.rec.waitCount(t, "a stable", kills+1, byEvent("a", fsm.Stable))
		b.mem("a").Gen(gen).Kill()
		kills++
		b.rec.waitCount(t, "a recovered", kills+1, into("a", fsm.Established))
	}
	// A third crash with a call in flight: connection_lost.
	lost := make(chan string, 1)
	supA := b.sup(t, "a")
	go func() { lost <- b.callSup(supA, "block") }()
	select {
	case <-b.entered["a"]:
	case r := <-lost:
		t.Fatalf("block returned before the crash: %s", r)
	case <-time.After(opsDeadline):
		t.Fatal("block never reached the server")
	}
	b.rec.waitCount(t, "a stable", kills+1, byEvent("a", fsm.Stable))
	b.mem("a").Gen(3).Kill()
	kills++
	if r := <-lost; r != resultConnectionLost {
		t.Errorf("call in flight at the crash: %s, want %s", r, resultConnectionLost)
	}
	results[[2]string{"a", resultConnectionLost}]++
	b.rec.waitCount(t, "a recovered", kills+1, into("a", fsm.Established))

	// b crashes and every retry is refused: exhausted.
	b.refuse["b"].Store(true)
	b.rec.waitCount(t, "b stable", 1, byEvent("b", fsm.Stable))
	b.mem("b").Gen(1).Kill()
	b.rec.waitCount(t, "b exhausted", 1, into("b", fsm.Exhausted))
	code, rep := readyz(t, b.srv.URL)
	if code != http.StatusServiceUnavailable || rep.Ready || !strings.Contains(rep.Reason, "b is exhausted") {
		t.Fatalf("/readyz while b is exhausted: %d %+v", code, rep)
	}
	for _, s := range rep.Servers {
		if s.Server == "b" && (s.State != "exhausted" || s.Attempt != s.MaxAttempts || s.MaxAttempts != 2 || s.LastError == "" || s.NextRetry != "") {
			t.Errorf("/readyz line of exhausted b: %+v", s)
		}
	}
	if code, rep := readyz(t, b.srv.URL); code != http.StatusServiceUnavailable || !strings.Contains(rep.Reason, "b is exhausted") {
		t.Errorf("/readyz while b is exhausted: %d %+v", code, rep)
	}
	if r := b.call(t, "b", "echo"); r != resultNotConnected {
		t.Errorf("call of exhausted b: %s, want %s", r, resultNotConnected)
	}
	results[[2]string{"b", resultNotConnected}]++
	fams, _ := quietScrape(t, b)
	checkStateGauge(t, fams, "b", fsm.Exhausted)
	checkStateGauge(t, fams, "a", fsm.Established)

	// The manual reconnect brings b back: ready again.
	b.refuse["b"].Store(false)
	if err := b.sup(t, "b").Reconnect(); err != nil {
		t.Fatal(err)
	}
	b.rec.waitCount(t, "b reconnected", 2, into("b", fsm.Established))
	if code, rep := readyz(t, b.srv.URL); code != http.StatusOK || !rep.Ready {
		t.Fatalf("/readyz after b's reconnect: %d %+v", code, rep)
	}

	fams, recorded := quietScrape(t, b)
	checkTransitionCounters(t, fams, recorded)
	if got := value(t, fams, "mcpkeep_transitions_total", map[string]string{"server": "a", "event": "closed"}); got != float64(kills) {
		t.Errorf(`transitions_total{server="a",event="closed"} = %v, %d kills`, got, kills)
	}
	if got := value(t, fams, "mcpkeep_transitions_total", map[string]string{"server": "b", "event": "closed"}); got != 1 {
		t.Errorf(`transitions_total{server="b",event="closed"} = %v, 1 kill`, got)
	}
	for _, server := range []string{"a", "b"} {
		want := b.rec.count(isReconnect(server))
		if got := value(t, fams, "mcpkeep_reconnects_total", map[string]string{"server": server}); got != float64(want) {
			t.Errorf("reconnects_total{server=%q} = %v, %d happened", server, got, want)
		}
		checkStateGauge(t, fams, server, fsm.Established)
		if got := value(t, fams, "mcpkeep_calls_replayed_total", map[string]string{"server": server}); got != 0 {
			t.Errorf("calls_replayed_total{server=%q} = %v, want 0 (no tool of theirs declares a hint)", server, got)
		}
		if sup, ok := b.pool.Supervisor(server); ok {
			if got := value(t, fams, "mcpkeep_calls_held_total", map[string]string{"server": server}); got != float64(sup.CallsHeld()) {
				t.Errorf("calls_held_total{server=%q} = %v, the supervisor held %d", server, got, sup.CallsHeld())
			}
		}
		for kind, want := range map[string]float64{"tools": 3, "prompts": 0, "resources": 0, "templates": 0} {
			if got := value(t, fams, "mcpkeep_catalog_items", map[string]string{"server": server, "kind": kind}); got != want {
				t.Errorf("catalog_items{server=%q,kind=%q} = %v, want %v", server, kind, got, want)
			}
		}
	}
	if got := b.rec.count(isReconnect("a")); got != kills {
		t.Errorf("a: %d reconnects for %d kills (each retry succeeds)", got, kills)
	}
	if got := b.rec.count(byEvent("b", fsm.Reconnect)); got != 1 {
		t.Errorf("b: %d manual reconnects, want 1", got)
	}
	// One outage per crash, each closed by the next established.
	if got := histCount(fams, "mcpkeep_outage_seconds", map[string]string{"server": "a"}); got != uint64(kills) {
		t.Errorf("outage_seconds_count{server=a} = %d, want %d", got, kills)
	}
	if got := histCount(fams, "mcpkeep_outage_seconds", map[string]string{"server": "b"}); got != 1 {
		t.Errorf("outage_seconds_count{server=b} = %d, want 1", got)
	}
	if results[[2]string{"a", resultOK}] != 1 || results[[2]string{"a", resultError}] != 1 {
		t.Errorf("echo and an unknown tool gave %v, want one ok and one error", results)
	}
	calls := map[string]int{}
	for k, n := range results {
		calls[k[0]] += n
		if got := value(t, fams, "mcpkeep_requests_total", map[string]string{"server": k[0], "method": "tools/call", "result": k[1]}); got != float64(n) {
			t.Errorf("requests_total{server=%q,result=%q} = %v, want %d", k[0], k[1], got, n)
		}
	}
	for server, n := range calls {
		if got := histCount(fams, "mcpkeep_request_seconds", map[string]string{"server": server, "method": "tools/call"}); got != uint64(n) {
			t.Errorf("request_seconds_count{server=%q} = %d, want %d", server, got, n)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	// A server the config enables but the pool does not run, and the
	// shutdown, both make the instance not ready.
	b.health.Expect([]string{"a", "b", "ghost"})
	if code, rep := readyz(t, b.srv.URL); code != http.StatusServiceUnavailable || rep.Ready || !strings.Contains(rep.Reason, "ghost is not running") {
		t.Errorf("/readyz expecting ghost: %d %+v", code, rep)
	}
	b.health.Expect([]string{"a", "b"})
	if code, rep := readyz(t, b.srv.URL); code != http.StatusOK || !rep.Ready {
		t.Errorf("/readyz expecting a and b: %d %+v", code, rep)
	}
	b.health.Stop()
	if code, rep := readyz(t, b.srv.URL); code != http.StatusServiceUnavailable || rep.Ready || !strings.HasPrefix(rep.Reason, "shutting down") {
		t.Errorf("/readyz while stopping: %d %+v", code, rep)
	}
	if code, body := opsGet(t, b.srv.URL, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz while stopping: %d %q", code, body)
	}
}

// TestOpsBeforeTheHost: before the host connected there is no pool: alive,
// not ready (with the reason), metrics without servers.
func TestOpsBeforeTheHost(t *testing.T) {
	o := New(nil)
	srv := httptest.NewServer(opsMux(o, proxy.NewHealth(), func() *mcpkeep.Pool { return nil }))
	defer srv.Close()
	if code, body := opsGet(t, srv.URL, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body := opsGet(t, srv.URL, "/readyz")
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if code != http.StatusServiceUnavailable || raw["ready"] != false || raw["reason"] == "" || fmt.Sprint(raw["servers"]) != "[]" {
		t.Errorf("/readyz before the host: %d %s", code, body)
	}
	fams := scrape(t, srv.URL)
	if fams["mcpkeep_server_state"] != nil || fams["go_goroutines"] == nil {
		t.Errorf("/metrics before the host: server_state %v, go_goroutines %v", fams["mcpkeep_server_state"] != nil, fams["go_goroutines"] != nil)
	}
	if code, rep := readyz(t, srv.URL); code != http.StatusServiceUnavailable || !strings.Contains(rep.Reason, "no host has connected yet") {
		t.Errorf("/readyz before the host: %d %+v", code, rep)
	}
	resp, err := http.Post(srv.URL+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d, want 405", resp.StatusCode)
	}
}

// TestOpsRequestResults: observeRequest's classification, and observers.
func TestOpsRequestResults(t *testing.T) {
	o := New(nil)
	srv := httptest.NewServer(opsMux(o, proxy.NewHealth(), func() *mcpkeep.Pool { return nil }))
	defer srv.Close()
	start := time.Now()
	for _, err := range []error{
		nil,
		nil,
		errors.New("tool failed"),
		&mcpkeep.NotConnectedError{Server: "s", State: fsm.BackingOff},
		&mcpkeep.NotConnectedError{Server: "s", State: fsm.Exhausted},
		fmt.Errorf("mcpkeep: server %q gen 1: %w: %w", "s", mcpkeep.ErrConnectionLost, io.EOF),
	} {
		o.Request("s", "prompts/get", time.Since(start), err)
	}
	fams := scrape(t, srv.URL)
	for result, want := range map[string]float64{resultOK: 2, resultError: 1, resultNotConnected: 2, resultConnectionLost: 1} {
		if got := value(t, fams, "mcpkeep_requests_total", map[string]string{"server": "s", "method": "prompts/get", "result": result}); got != want {
			t.Errorf("requests_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	if got := histCount(fams, "mcpkeep_request_seconds", map[string]string{"server": "s", "method": "prompts/get"}); got != 6 {
		t.Errorf("request_seconds_count = %d, want 6", got)
	}

	if mcpkeep.Observers(nil, nil) != nil {
		t.Error("observers of nothing is not nil")
	}
	var seen []string
	obs := mcpkeep.Observers(func(mcpkeep.Transition) { seen = append(seen, "1") }, nil, func(mcpkeep.Transition) { seen = append(seen, "2") })
	obs(mcpkeep.Transition{})
	if strings.Join(seen, "") != "12" {
		t.Errorf("observers ran %v, want 1 then 2", seen)
	}
}

// opsMux serves metrics and health as the command does.
func opsMux(m *Registry, h *proxy.Health, pool func() *mcpkeep.Pool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler(pool))
	mux.Handle("/", h.Handler(pool, ""))
	return mux
}
