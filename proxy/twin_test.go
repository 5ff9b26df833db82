package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// docs/design.md §24: with hosts of both eras on one endpoint, a stdio
// server's legacy process serves the 2025-11-25 hosts and a twin process
// asked for 2026-07-28 serves the 2026-07-28 hosts' tool calls, so a
// tool's input request reaches such a host under the server's own key;
// "eras": "shared" keeps one process and the bridge. Real processes (the
// fixture is this test binary): exactly one per server and era, none
// left after Shutdown.
func TestTwinServesModernHostsWithTheServersOwnInputRequests(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to count the child processes") // as TestHostilePeers
	}
	path, args, env := fixture.CommandEnv("normal")
	server := func(extra map[string]any) map[string]any {
		m := map[string]any{"command": path, "args": args, "env": env}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{
		"f": server(map[string]any{"eras": "twin"}), "g": server(nil)}})
	srv := New(cfg, Options{})
	h, err := srv.Handler(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			shutdown()
		}
	})
	select {
	case <-srv.Applied():
	case <-time.After(testDeadline):
		t.Fatal("the servers never started")
	}
	if got := children(t); len(got) != 2 {
		t.Fatalf("before any call: %d child processes %v, want 2 (f and g, legacy era)", len(got), got)
	}

	// The legacy host gets the tool's question as elicitation/create.
	var asked atomic.Int32
	legacy := connectHTTP(t, h, "2025-11-25", &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "legacy"}}, nil
		}})
	for _, name := range []string{"f__elicit", "g__elicit"} {
		got, isErr := call(t, legacy, name, map[string]any{"message": "who?"})
		if isErr || !strings.Contains(got, `"legacy"`) {
			t.Errorf("legacy host: %s = %q (error %v), want the host's answer", name, got, isErr)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("legacy host asked %d times by elicitation/create, want 2", n)
	}

	// A 2026-07-28 host's call of f goes to f's twin: the input request
	// carries the server's own key. g is shared: the bridge's key.
	for _, c := range []struct {
		tool    string
		twinKey bool
	}{{"f__elicit", true}, {"g__elicit", false}, {"f__elicit", true}} {
		keys := modernInputKeys(t, h, c.tool)
		if own := slices.Equal(keys, []string{"elicit"}); own != c.twinKey || len(keys) != 1 {
			t.Errorf("2026-07-28 host: %s asked with keys %v; want the server's own key %q: %v", c.tool, keys, "elicit", c.twinKey)
		}
	}
	got := children(t)
	if len(got) != 3 {
		t.Errorf("after both eras called: %d child processes %v, want 3 (f, f's twin, g)", len(got), got)
	}
	var names []string
	for _, sn := range srv.twins.states() {
		names = append(names, sn.Server+"@"+strconv.FormatUint(sn.Gen, 10))
	}
	if !slices.Equal(names, []string{"f-2026-07-28@1"}) {
		t.Errorf("twins %v, want one, f-2026-07-28, on its first generation", names)
	}
	if v := srv.uiView(true); !slices.ContainsFunc(v.Servers, func(s uiServer) bool { return s.Name == "f-2026-07-28" }) {
		t.Errorf("the live page's rows %+v do not show the twin", v.Servers)
	}
	if rd := srv.health.Readiness(srv.getPool()); !rd.Ready ||
		!slices.ContainsFunc(rd.Servers, func(s ServerStatus) bool { return s.Server == "f-2026-07-28" && s.Ready }) {
		t.Errorf("readiness (status) %+v: want ready, with the twin's line", rd)
	}
	// Idle, the twin's process ends (its row stays, idle); the next
	// 2026-07-28 call starts its next generation.
	sup, ok := srv.twins.supervisor("f-2026-07-28")
	if !ok {
		t.Fatal("no twin supervisor f-2026-07-28")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := sup.StopIdle(ctx); err != nil {
		t.Fatalf("StopIdle of the twin: %v", err)
	}
	for sup.State().State != fsm.Idle {
		select {
		case <-sup.Changed():
		case <-ctx.Done():
			t.Fatalf("the twin never went idle: %v", sup.State().State)
		}
	}
	if got := children(t); len(got) != 2 {
		t.Errorf("twin idle: %d child processes %v, want 2 (f, g)", len(got), got)
	}
	if keys := modernInputKeys(t, h, "f__elicit"); !slices.Equal(keys, []string{"elicit"}) {
		t.Errorf("after the twin's idle stop: keys %v, want [elicit]", keys)
	}
	if gen := sup.State().Gen; gen != 2 {
		t.Errorf("twin generation %d after its idle stop and a call, want 2", gen)
	}
	if got := children(t); len(got) != 3 {
		t.Errorf("twin restarted: %d child processes %v, want 3", len(got), got)
	}
	// A reload to "eras": "shared" disposes the twin and leaves the
	// server's own process running.
	before := children(t)
	shared := mustConfig(t, map[string]any{"mcpServers": map[string]any{
		"f": server(map[string]any{"eras": "shared"}), "g": server(map[string]any{"eras": "shared"})}})
	if err := srv.Reload(ctx, shared); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	after := children(t)
	if len(after) != 2 || !slices.Contains(before, after[0]) || !slices.Contains(before, after[1]) {
		t.Errorf("after a reload to shared eras: child processes %v (before %v), want f's and g's, unchanged", after, before)
	}
	if keys := modernInputKeys(t, h, "f__elicit"); slices.Equal(keys, []string{"elicit"}) {
		t.Errorf("shared eras after the reload: keys %v, want the bridge's", keys)
	}
	if n := len(srv.twins.states()); n != 0 {
		t.Errorf("%d twins after the reload to shared eras, want 0", n)
	}
	_ = legacy.Close()
	shutdown()
	stopped = true
	if left := children(t); len(left) != 0 {
		t.Errorf("after Shutdown: child processes %v left", left)
	}
}

// connectHTTP connects a go-sdk host of era to h over Streamable HTTP.
func connectHTTP(t *testing.T, h http.Handler, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return (&rig{t: t}).httpHost(hs.URL, era, opts)
}

// modernInputKeys sends a 2026-07-28 tools/call of tool (declaring
// elicitation), returns the keys of its result's input requests, and
// answers them (a second request with the requestState and the answer),
// expecting the tool's result to carry the answer.
func modernInputKeys(t *testing.T, h http.Handler, tool string) []string {
	t.Helper()
	params := map[string]any{
		"name": tool, "arguments": map[string]any{"message": "who?"},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:                   modernVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
		}}
	send := func() (res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Content       []mcp.TextContent          `json:"content"`
	}) {
		t.Helper()
		body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
		status, code, raw := post(t, h, body, map[string]string{"Mcp-Protocol-Version": modernVersion,
			"Mcp-Method": "tools/call", "Mcp-Name": tool})
		if status != http.StatusOK || code != 0 {
			t.Fatalf("%s: status %d, error %d: %s", tool, status, code, raw)
		}
		var msg struct {
			Result *struct {
				ResultType    string                     `json:"resultType"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
				Content       []mcp.TextContent          `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(raw), &msg); err != nil || msg.Result == nil {
			t.Fatalf("%s: %v; want a result, got %s", tool, err, raw)
		}
		return *msg.Result
	}
	first := send()
	if first.ResultType != "input_required" {
		t.Fatalf("%s: result type %q, want input_required", tool, first.ResultType)
	}
	var keys []string
	answers := map[string]any{}
	for k, v := range first.InputRequests {
		if !strings.Contains(string(v), `"elicitation/create"`) {
			t.Errorf("%s: input request %q is %s, want elicitation/create", tool, k, v)
		}
		keys = append(keys, k)
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"answer": "modern"}}
	}
	slices.Sort(keys)
	params["requestState"], params["inputResponses"] = first.RequestState, answers
	final := send()
	if final.ResultType == "input_required" || len(final.Content) == 0 || !strings.Contains(final.Content[0].Text, `"modern"`) {
		t.Errorf("%s: the answered round ended %+v, want the tool's result with the host's answer", tool, final)
	}
	return keys
}

// children are the pids of this process's live (not zombie) children.
func children(t *testing.T) []int {
	t.Helper()
	me := os.Getpid()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

// A server whose twin answers initialize with an older version does not
// speak 2026-07-28: the twin is disposed at once, never started again
// (until a reload), and the 2026-07-28 host's calls take the bridge of
// the legacy process (docs/design.md §24).
func TestTwinOfALegacyOnlyServerFallsBackToTheBridge(t *testing.T) {
	r := newRigWith(t, Options{}, map[string]map[string]any{"a": {"eras": "twin"}}, "a")
	twin := transport.NewMemory("echo", "hang")
	twin.Serve = func(gen uint64, s *mcp.Server) { serveFeatures("a", gen, s) }
	twin.ServerOptions = func(uint64) *mcp.ServerOptions { return featureOptions("a") }
	r.mems[twinName("a")] = twin // the rig pins every session to the legacy era
	hs := r.serveHTTP()
	modern := r.httpHost(hs.URL, modernVersion, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "the modern host"}}, nil
		}})
	r.waitApplied()
	waitTools(t, modern, []string{"a__echo", "a__flood", "a__hang", "a__rpcerr", "a__sample", "a__sleep"})
	for range 2 {
		if got, isErr := call(t, modern, "a__sample", nil); got != "sampled: the modern host" || isErr {
			t.Errorf("a__sample = %q (error %v), want the bridge's answer", got, isErr)
		}
	}
	if n := len(twin.Opened()); n != 1 {
		t.Errorf("the legacy-only twin was opened %d times, want once", n)
	}
	if n := twin.Live(); n != 0 {
		t.Errorf("%d generations of the legacy-only twin left, want none", n)
	}
	if st := r.srv.twins.states(); len(st) != 0 {
		t.Errorf("twins %+v, want none", st)
	}
}

// Calls of 2026-07-28 hosts that arrive at once start one twin: the
// twins' turn serializes the start, and the calls behind it find it.
func TestTwinStartsOnceForConcurrentCalls(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to count the child processes") // as TestHostilePeers
	}
	path, args, env := fixture.CommandEnv("normal")
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{
		"f": map[string]any{"command": path, "args": args, "env": env, "eras": "twin"}}})
	srv := New(cfg, Options{})
	h, err := srv.Handler(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if left := children(t); len(left) != 0 {
			t.Errorf("after Shutdown: child processes %v left", left)
		}
	})
	select {
	case <-srv.Applied():
	case <-time.After(testDeadline):
		t.Fatal("the servers never started")
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			body := modernCall("f__echo")
			body["id"] = i + 1
			status, code, raw := post(t, h, body, map[string]string{"Mcp-Protocol-Version": modernVersion,
				"Mcp-Method": "tools/call", "Mcp-Name": "f__echo"})
			if status != http.StatusOK || code != 0 || !strings.Contains(raw, `"hi"`) {
				t.Errorf("call %d: status %d, error %d: %s", i, status, code, raw)
			}
		})
	}
	wg.Wait()
	if got := children(t); len(got) != 2 {
		t.Errorf("%d child processes %v, want 2 (f and one twin)", len(got), got)
	}
	if st := srv.twins.states(); len(st) != 1 || st[0].Gen != 1 {
		t.Errorf("twins %+v, want one on its first generation", st)
	}
}
