package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input requests of a 2026-07-28 server inside a task (docs/design.md
// §25): the server asks by answering the task's call with input requests
// (input_required) and a requestState; the task shows each round whole,
// the host answers with tasks/update, and the call is sent again with the
// answers under the server's keys and its state unchanged. The server is
// a stateless go-sdk server over HTTP, as `mcpkeep run --url` fronts one.

// mrtrUpstream is the server: its tools ask by input requests and check
// that each round echoes the state the last one gave. rounds logs each
// round as "tool state keys".
type mrtrUpstream struct {
	mu     sync.Mutex
	rounds []string
}

func (u *mrtrUpstream) log(tool string, req *mcp.CallToolRequest) {
	keys := make([]string, 0, len(req.Params.InputResponses))
	for k := range req.Params.InputResponses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	u.mu.Lock()
	u.rounds = append(u.rounds, fmt.Sprintf("%s %q %s", tool, req.Params.RequestState, strings.Join(keys, ",")))
	u.mu.Unlock()
}

func (u *mrtrUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.rounds)
}

func elicit(msg string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: msg, RequestedSchema: map[string]any{"type": "object"}}
}

// answered is the "v" the host gave under key, or "".
func answered(req *mcp.CallToolRequest, key string) string {
	if r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult); ok && r.Action == "accept" {
		v, _ := r.Content["v"].(string)
		return v
	}
	return ""
}

func asks(state string, reqs mcp.InputRequestMap) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

func (u *mrtrUpstream) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "0"}, nil)
	tool := func(name string, h func(req *mcp.CallToolRequest) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.log(name, req)
			return h(req), nil
		})
	}
	// ask: one round of one input request.
	tool("ask", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		if v := answered(req, "name"); v != "" && req.Params.RequestState == "r1" {
			return textResult("hello " + v)
		}
		return asks("r1", mcp.InputRequestMap{"name": elicit("name?")})
	})
	// two: one round of two input requests.
	tool("two", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		a, b := answered(req, "a"), answered(req, "b")
		if a != "" && b != "" && req.Params.RequestState == "t1" {
			return textResult("a=" + a + " b=" + b)
		}
		return asks("t1", mcp.InputRequestMap{"a": elicit("a?"), "b": elicit("b?")})
	})
	// again: two rounds, each asking under the same key.
	tool("again", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		v := answered(req, "name")
		switch {
		case v != "" && req.Params.RequestState == "s1":
			return asks("s2:"+v, mcp.InputRequestMap{"name": elicit("really?")})
		case v != "" && strings.HasPrefix(req.Params.RequestState, "s2:"):
			return textResult("confirmed " + strings.TrimPrefix(req.Params.RequestState, "s2:") + " " + v)
		}
		return asks("s1", mcp.InputRequestMap{"name": elicit("name?")})
	})
	// forever: asks again at every round.
	tool("forever", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		return asks(req.Params.RequestState+"x", mcp.InputRequestMap{"k": elicit("more?")})
	})
	// sample: asks for sampling.
	tool("sample", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		if req.Params.InputResponses["s"] != nil {
			return textResult("sampled")
		}
		return asks("p1", mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 9,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}})
	})
	return s
}

// mrtrRig fronts the stateless server as server w, every call a task.
func mrtrRig(t *testing.T) (*Server, http.Handler, *mrtrUpstream) {
	t.Helper()
	return mrtrRigWith(t, map[string]any{"mode": "always", "ttlMs": 60000}, Options{})
}

// mrtrRigWith is mrtrRig with w's "tasks" policy and the proxy's options.
func mrtrRigWith(t *testing.T, policy map[string]any, opts Options) (*Server, http.Handler, *mrtrUpstream) {
	t.Helper()
	u := &mrtrUpstream{}
	srv := u.server()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{"w": map[string]any{
		"url": hs.URL, "tasks": policy}}})
	p := New(cfg, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.CloseClientConnections()
	})
	h, err := p.Handler(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Applied():
	case <-time.After(testDeadline):
		t.Fatal("the server never started")
	}
	return p, h, u
}

// elicitingHost is the capabilities of a host that declared elicitation
// and the tasks extension.
var elicitingHost = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExtension: map[string]any{}}}

// modernAs posts a 2026-07-28 request declaring caps.
func modernAs(t *testing.T, h http.Handler, caps map[string]any, method, name string, params map[string]any) (int64, map[string]any, string) {
	t.Helper()
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:           modernVersion,
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "0"},
		metaClientCapabilities:               caps,
	}
	hdr := map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": method, "Mcp-Name": name}
	_, jcode, raw := post(t, h, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, hdr)
	var msg struct {
		Result map[string]any `json:"result"`
	}
	_ = json.Unmarshal([]byte(raw), &msg)
	return jcode, msg.Result, raw
}

// startTask calls tool of w as a task and returns the task's id.
func startTask(t *testing.T, h http.Handler, tool string) string {
	t.Helper()
	jcode, res, raw := modernAs(t, h, elicitingHost, "tools/call", "w__"+tool, map[string]any{"name": "w__" + tool, "arguments": map[string]any{}})
	id, _ := res["taskId"].(string)
	if jcode != 0 || res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call %s: %s", tool, raw)
	}
	return id
}

// settle waits (on the engine's Watch, within the deadline) until the
// task of id is ended or input_required with n open input requests, and
// returns it as tasks/get shows it.
func settle(t *testing.T, p *Server, h http.Handler, id string, n int) map[string]any {
	t.Helper()
	deadline := time.After(testDeadline)
	for {
		rec, moved, live := p.tasks.e.Watch(id)
		if !live || (rec.Status == tasks.InputRequired && len(rec.InputRequests) == n) {
			break
		}
		select {
		case <-moved:
		case <-deadline:
			t.Fatalf("task %s: %s with %d input requests, want %d (or ended)", id, rec.Status, len(rec.InputRequests), n)
		}
	}
	_, task := taskGet(t, h, id)
	return task
}

// inputKeys are the keys of the task's open input requests, sorted, each
// checked to be an elicitation.
func inputKeys(t *testing.T, task map[string]any) []string {
	t.Helper()
	reqs, _ := task["inputRequests"].(map[string]any)
	var keys []string
	for k, v := range reqs {
		if m, _ := v.(map[string]any); m["method"] != "elicitation/create" {
			t.Errorf("input request %s: %v, want elicitation/create", k, v)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// update answers the task's keys with "v" values.
func update(t *testing.T, h http.Handler, id string, answers map[string]string) {
	t.Helper()
	resp := map[string]any{}
	for k, v := range answers {
		resp[k] = map[string]any{"action": "accept", "content": map[string]any{"v": v}}
	}
	if jcode, _, raw := modernAs(t, h, elicitingHost, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": resp}); jcode != 0 {
		t.Fatalf("tasks/update: %s", raw)
	}
}

// wantKey checks a task's key names the server's key, and is not a
// legacy carried request's mcpkeep-N.
func wantKey(t *testing.T, key, server string) {
	t.Helper()
	if !strings.HasPrefix(key, "mcpkeep-") || !strings.HasSuffix(key, "-"+server) {
		t.Fatalf("input key %q, want mcpkeep-N-%s", key, server)
	}
}

// TestTaskModernServerOneRound: the server's input request is the
// task's (input_required, under a key keeping the server's), the answer
// goes back under the server's key with its state, and the task
// completes with the server's result.
func TestTaskModernServerOneRound(t *testing.T) {
	p, h, u := mrtrRig(t)
	id := startTask(t, h, "ask")
	task := settle(t, p, h, id, 1)
	keys := inputKeys(t, task)
	if task["status"] != "input_required" || len(keys) != 1 {
		t.Fatalf("the task: %s", resultText(task))
	}
	wantKey(t, keys[0], "name")
	update(t, h, id, map[string]string{keys[0]: "Ada"})
	done := pollTask(t, h, id)
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || !strings.Contains(resultText(res), "hello Ada") {
		t.Fatalf("the task: %s", resultText(done))
	}
	if got, want := u.seen(), []string{`ask "" `, `ask "r1" name`}; !slices.Equal(got, want) {
		t.Fatalf("the server's rounds: %q, want %q", got, want)
	}
}

// TestTaskModernServerTwoRounds: a second round reusing the server's key
// is asked under a new key of the task; an answer to the first round's
// key is dropped, not taken for the second; the states go back as given.
func TestTaskModernServerTwoRounds(t *testing.T) {
	p, h, u := mrtrRig(t)
	id := startTask(t, h, "again")
	first := inputKeys(t, settle(t, p, h, id, 1))
	wantKey(t, first[0], "name")
	update(t, h, id, map[string]string{first[0]: "Ada"})
	second := inputKeys(t, settle(t, p, h, id, 1))
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("round 2's keys %q, want one other than round 1's %q", second, first)
	}
	wantKey(t, second[0], "name")
	// A host repeating its first answer: the key is no longer open.
	update(t, h, id, map[string]string{first[0]: "stale"})
	if rec, _, _ := p.tasks.e.Watch(id); rec.Status != tasks.InputRequired {
		t.Fatalf("after an answer to round 1's key again: %s, want input_required", rec.Status)
	}
	update(t, h, id, map[string]string{second[0]: "yes"})
	done := pollTask(t, h, id)
	if res, _ := done["result"].(map[string]any); done["status"] != "completed" || !strings.Contains(resultText(res), "confirmed Ada yes") {
		t.Fatalf("the task: %s", resultText(done))
	}
	if got, want := u.seen(), []string{`again "" `, `again "s1" name`, `again "s2:Ada" name`}; !slices.Equal(got, want) {
		t.Fatalf("the server's rounds: %q, want %q", got, want)
	}
}

// TestTaskModernServerPartialAnswers: a round of two input requests is
// shown whole; one answer leaves the task input_required with the other
// open and the call not sent again; the second answer completes it.
func TestTaskModernServerPartialAnswers(t *testing.T) {
	p, h, u := mrtrRig(t)
	id := startTask(t, h, "two")
	keys := inputKeys(t, settle(t, p, h, id, 2))
	if len(keys) != 2 {
		t.Fatalf("keys %q, want the round's two", keys)
	}
	if strings.HasSuffix(keys[0], "-b") { // N is in the order the round was read
		keys[0], keys[1] = keys[1], keys[0]
	}
	wantKey(t, keys[0], "a")
	wantKey(t, keys[1], "b")
	update(t, h, id, map[string]string{keys[0]: "1"})
	task := settle(t, p, h, id, 1)
	if left := inputKeys(t, task); task["status"] != "input_required" || !slices.Equal(left, keys[1:]) {
		t.Fatalf("after one answer: %s, want input_required with %s open", resultText(task), keys[1])
	}
	if n := len(u.seen()); n != 1 {
		t.Fatalf("the server got %d rounds before the round was answered whole, want 1", n)
	}
	update(t, h, id, map[string]string{keys[1]: "2"})
	done := pollTask(t, h, id)
	if res, _ := done["result"].(map[string]any); done["status"] != "completed" || !strings.Contains(resultText(res), "a=1 b=2") {
		t.Fatalf("the task: %s", resultText(done))
	}
}

// TestTaskModernServerCancelWhileAsking: a cancel while the task waits
// for the host ends it; the call is not sent again.
func TestTaskModernServerCancelWhileAsking(t *testing.T) {
	p, h, u := mrtrRig(t)
	id := startTask(t, h, "ask")
	settle(t, p, h, id, 1)
	if jcode, _, raw := modernAs(t, h, elicitingHost, "tasks/cancel", id, map[string]any{"taskId": id}); jcode != 0 {
		t.Fatalf("tasks/cancel: %s", raw)
	}
	if done := pollTask(t, h, id); done["status"] != "cancelled" {
		t.Fatalf("the task: %s", resultText(done))
	}
	select {
	case <-p.calls.idle():
	case <-time.After(testDeadline):
		t.Fatal("the task's call still runs after the cancel")
	}
	if got := u.seen(); len(got) != 1 {
		t.Fatalf("the server's rounds: %q, want round 1 only", got)
	}
}

// TestTaskModernServerTTLWhileAsking: the TTL passing while the task
// waits for the host ends it (failed, expired) and the call with it; the
// call is not sent again.
func TestTaskModernServerTTLWhileAsking(t *testing.T) {
	clk := clock.NewMock()
	p, h, u := mrtrRigWith(t, map[string]any{"mode": "always", "ttlMs": 60000}, Options{Tasks: tasks.Options{Clock: clk}})
	id := startTask(t, h, "ask")
	settle(t, p, h, id, 1)
	done := p.tasks.e.Done(id)
	clk.Add(61 * time.Second)
	select {
	case <-done:
	case <-time.After(testDeadline):
		t.Fatal("the task did not end at its TTL")
	}
	select {
	case <-p.calls.idle():
	case <-time.After(testDeadline):
		t.Fatal("the task's call still runs after its TTL")
	}
	if jcode, _ := taskGet(t, h, id); jcode != -32602 {
		t.Fatalf("tasks/get after the TTL: %d, want -32602 (forgotten)", jcode)
	}
	if got := u.seen(); len(got) != 1 {
		t.Fatalf("the server's rounds: %q, want round 1 only", got)
	}
}

// TestTaskModernServerUndeclared: the server asks for sampling, which
// the creating request did not declare: the task fails saying so, nothing
// is asked, and the call is not sent again.
func TestTaskModernServerUndeclared(t *testing.T) {
	_, h, u := mrtrRig(t)
	id := startTask(t, h, "sample")
	done := pollTask(t, h, id)
	e, _ := done["error"].(map[string]any)
	msg, _ := e["message"].(string)
	data, _ := e["data"].(map[string]any)
	if done["status"] != "failed" || !strings.Contains(msg, "sampling") || !strings.Contains(msg, "declare") || done["inputRequests"] != nil ||
		data["reason"] != "input_not_declared" {
		t.Fatalf("the task: %s; want failed saying sampling was not declared", resultText(done))
	}
	if got := u.seen(); len(got) != 1 {
		t.Fatalf("the server's rounds: %q, want round 1 only", got)
	}
}

// TestTaskModernServerRoundsBound: a server that asks at every round is
// answered up to the bound, then the task fails saying so.
func TestTaskModernServerRoundsBound(t *testing.T) {
	p, h, u := mrtrRig(t)
	id := startTask(t, h, "forever")
	var done map[string]any
	for range 20 {
		task := settle(t, p, h, id, 1)
		if task["status"] != "input_required" {
			done = pollTask(t, h, id)
			break
		}
		keys := inputKeys(t, task)
		wantKey(t, keys[0], "k")
		update(t, h, id, map[string]string{keys[0]: "more"})
	}
	e, _ := done["error"].(map[string]any)
	msg, _ := e["message"].(string)
	data, _ := e["data"].(map[string]any)
	if done["status"] != "failed" || !strings.Contains(msg, "rounds") || data["reason"] != "input_rounds_exceeded" {
		t.Fatalf("the task: %s; want failed naming the rounds' bound", resultText(done))
	}
	if n := len(u.seen()); n != 10 {
		t.Fatalf("the server got %d rounds, want the bound's 10", n)
	}
}

// lossRig serves in-memory server w on 2026-07-28 (every call a task)
// with tool ro (readOnlyHint: replay-safe), which asks for a name in
// round 1 and, given it, works until cancelled; rounds logs "gen state".
func lossRig(t *testing.T) (*rig, http.Handler, *mrtrUpstream) {
	t.Helper()
	u := &mrtrUpstream{}
	r := &rig{t: t, mems: map[string]*transport.Memory{}, downstream: modernVersion}
	m := transport.NewMemory("echo")
	m.Serve = func(gen uint64, s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "ro", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				u.log(fmt.Sprintf("gen%d", gen), req)
				if answered(req, "name") == "" {
					return asks("r1", mcp.InputRequestMap{"name": elicit("name?")}), nil
				}
				<-ctx.Done()
				return nil, ctx.Err()
			})
	}
	r.mems["w"] = m
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{"w": map[string]any{"command": "mem-w",
		"tasks": map[string]any{"mode": "always", "ttlMs": 60000}}},
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 3}})
	r.srv = New(cfg, Options{Pool: mcpkeep.PoolOptions{Opener: func(config.Server) (transport.Opener, error) {
		return pinned{m, modernVersion}, nil
	}}})
	shutdownAtCleanup(t, r.srv, "Shutdown")
	h := r.handler()
	return r, h, u
}

// TestTaskModernServerLostAfterAsking: once the server has asked (its
// round 1 answered with input requests), a loss of the server ends the
// task failed, outcome unknown, even for a replay-safe tool: no round
// (with its requestState, or from round 1 again) reaches the next
// generation. Lost while the host is asked, and lost in round 2.
func TestTaskModernServerLostAfterAsking(t *testing.T) {
	for _, answer := range []bool{false, true} {
		t.Run(fmt.Sprintf("answered=%v", answer), func(t *testing.T) {
			r, h, u := lossRig(t)
			m := r.mems["w"]
			id := startTask(t, h, "ro")
			keys := inputKeys(t, settle(t, r.srv, h, id, 1))
			if answer {
				update(t, h, id, map[string]string{keys[0]: "Ada"})
				deadline := time.After(testDeadline)
				for len(u.seen()) < 2 { // round 2 reached the server
					rec, moved, _ := r.srv.tasks.e.Watch(id)
					if rec.Status.Terminal() {
						t.Fatalf("the task ended before round 2: %s", rec.Status)
					}
					select {
					case <-moved:
					case <-time.After(10 * time.Millisecond): // the server's log has no channel; bounded by deadline
					case <-deadline:
						t.Fatal("round 2 never reached the server")
					}
				}
			}
			m.Gen(1).Kill()
			done := pollTask(t, h, id)
			e, _ := done["error"].(map[string]any)
			data, _ := json.Marshal(e["data"])
			if done["status"] != "failed" || !strings.Contains(string(data), "server_lost_outcome_unknown") {
				t.Fatalf("the task: %s; want failed, outcome unknown", resultText(done))
			}
			select {
			case <-r.srv.calls.idle():
			case <-time.After(testDeadline):
				t.Fatal("the task's call still runs")
			}
			for _, round := range u.seen() {
				if !strings.HasPrefix(round, "gen1 ") {
					t.Fatalf("the server's rounds %q: a round reached another generation", u.seen())
				}
			}
		})
	}
}

// TestTaskModernServerRoundsBeforeATask: under "auto", a 2026-07-28
// host's call whose server asks within the grace gets the round as an
// InputRequiredResult under the task's key (the server's key kept in
// it); its next round, answered under that key, ends inline with the
// server's result (rounds before a task, composed with the server's own).
func TestTaskModernServerRoundsBeforeATask(t *testing.T) {
	_, h, u := mrtrRigWith(t, map[string]any{"mode": "auto", "graceMs": 5000, "ttlMs": 60000}, Options{})
	params := map[string]any{"name": "w__ask", "arguments": map[string]any{}}
	jcode, res, raw := modernAs(t, h, elicitingHost, "tools/call", "w__ask", params)
	reqs, _ := res["inputRequests"].(map[string]any)
	state, _ := res["requestState"].(string)
	if jcode != 0 || res["resultType"] != "input_required" || len(reqs) != 1 || state == "" {
		t.Fatalf("round 1: %s", raw)
	}
	var key string
	for k := range reqs {
		key = k
	}
	wantKey(t, key, "name")
	params = map[string]any{"name": "w__ask", "arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"v": "Ada"}}}}
	jcode, res, raw = modernAs(t, h, elicitingHost, "tools/call", "w__ask", params)
	if jcode != 0 || res["resultType"] != "complete" || !strings.Contains(raw, "hello Ada") {
		t.Fatalf("round 2: %s", raw)
	}
	if got, want := u.seen(), []string{`ask "" `, `ask "r1" name`}; !slices.Equal(got, want) {
		t.Fatalf("the server's rounds: %q, want %q", got, want)
	}
}
