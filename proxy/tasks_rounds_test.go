package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Rounds before a task (docs/design.md §25): a 2026-07-28 host's call
// under "auto" whose task asks within the grace period gets an
// InputRequiredResult; its next round gets the call's result, another
// round, or the task (the suite's tasks-mrtr-composition).

// roundRig serves server e (auto, grace 1s, TTL 60s) over the HTTP front;
// clk, when set, is the task engine's clock.
func roundRig(t *testing.T, clk clock.Clock) (*rig, http.Handler) {
	t.Helper()
	r := newRigWith(t, Options{Tasks: tasks.Options{Clock: clk}}, map[string]map[string]any{
		"e": {"tasks": map[string]any{"mode": "auto", "graceMs": 1000, "ttlMs": 60000}},
	}, "e")
	r.downstream = legacyVersion
	h := r.handler()
	return r, h
}

// roundOne calls e__sample (a legacy server's sampling request: the
// task's input request) and returns the round's answer.
func roundOne(t *testing.T, h http.Handler, args map[string]any) map[string]any {
	t.Helper()
	jcode, res := callTool(t, h, "e__sample", args, true)
	if jcode != 0 {
		t.Fatalf("round 1: error %d", jcode)
	}
	return res
}

// roundTwo continues tool with the answer to key and state; it returns
// the error code, the result and the raw answer.
func roundTwo(t *testing.T, h http.Handler, tool, key, state string) (int64, map[string]any, string) {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "yes"}}},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:           "2026-07-28",
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "0"},
			metaClientCapabilities:               map[string]any{"sampling": map[string]any{}, "extensions": map[string]any{tasksExtension: map[string]any{}}},
		}}
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
	_, jcode, raw := post(t, h, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, hdr)
	var msg struct {
		Result map[string]any `json:"result"`
	}
	_ = json.Unmarshal([]byte(raw), &msg)
	return jcode, msg.Result, raw
}

// askedKey is the one input request's key of a round-1 answer.
func askedKey(t *testing.T, res map[string]any) string {
	t.Helper()
	reqs, _ := res["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("round 1: want one input request: %s", resultText(res))
	}
	for k, v := range reqs {
		if m, _ := v.(map[string]any); m["method"] != "sampling/createMessage" {
			t.Fatalf("round 1: input request %s: %v", k, v)
		}
		return k
	}
	return ""
}

// TestTasksRoundOneAsks: round 1 is an InputRequiredResult carrying the
// task's input request and a requestState, and no taskId.
func TestTasksRoundOneAsks(t *testing.T) {
	r, h := roundRig(t, nil)
	res := roundOne(t, h, map[string]any{})
	if res["resultType"] != "input_required" || res["taskId"] != nil || res["status"] != nil {
		t.Fatalf("round 1: %s", resultText(res))
	}
	askedKey(t, res)
	state, _ := res["requestState"].(string)
	st, werr := r.srv.host.bridges.sealer().open(state)
	if werr != nil || st.Task == "" || st.Tool != "e__sample" || st.Server != "e" {
		t.Fatalf("round 1's requestState: %+v, %v", st, werr)
	}
	if n := r.srv.Tasks()[tasks.InputRequired]; n != 1 {
		t.Fatalf("tasks input_required: %d, want the round's task", n)
	}
}

// TestTasksRoundTwoInline: the answer lets the call end within the
// grace: round 2 is the call's result, and the task is forgotten.
func TestTasksRoundTwoInline(t *testing.T) {
	r, h := roundRig(t, nil)
	res := roundOne(t, h, map[string]any{})
	key, state := askedKey(t, res), res["requestState"].(string)
	jcode, got, raw := roundTwo(t, h, "e__sample", key, state)
	if jcode != 0 || got["resultType"] != "complete" || got["taskId"] != nil || !strings.Contains(resultText(got), "sampled: yes") {
		t.Fatalf("round 2: %s", raw)
	}
	for st, n := range r.srv.Tasks() {
		if n != 0 {
			t.Errorf("after an inline answer: %d tasks %s, want none", n, st)
		}
	}
}

// TestTasksRoundTwoTask: the call still works after the grace that
// follows the answer: round 2 is the task (no requestState, no
// inputRequests), which tasks/get shows working.
func TestTasksRoundTwoTask(t *testing.T) {
	_, h := roundRig(t, nil)
	res := roundOne(t, h, map[string]any{"hang": true})
	key, state := askedKey(t, res), res["requestState"].(string)
	jcode, got, raw := roundTwo(t, h, "e__sample", key, state)
	id, _ := got["taskId"].(string)
	if jcode != 0 || got["resultType"] != "task" || id == "" || got["requestState"] != nil || got["inputRequests"] != nil {
		t.Fatalf("round 2: %s", raw)
	}
	if _, task := taskGet(t, h, id); task["status"] != "working" {
		t.Fatalf("the task: %s", resultText(task))
	}
	modern(t, h, "tasks/cancel", id, map[string]any{"taskId": id}, true)
	if done := pollTask(t, h, id); done["status"] != "cancelled" {
		t.Fatalf("after cancel: %s", resultText(done))
	}
}

// TestTasksRoundStateRefused: a tampered state, and one continuing
// another tool, are -32602 saying why; the task is not touched.
func TestTasksRoundStateRefused(t *testing.T) {
	r, h := roundRig(t, nil)
	res := roundOne(t, h, map[string]any{})
	key, state := askedKey(t, res), res["requestState"].(string)
	flip := []byte(state)
	flip[len(flip)/2] ^= 1
	if flip[len(flip)/2] == '-' || flip[len(flip)/2] == '_' { // keep it base64url
		flip[len(flip)/2] = 'A'
	}
	for _, c := range []struct{ tool, state, why string }{
		{"e__sample", string(flip), "invalid requestState"},
		{"e__echo", state, "continues a call of"},
	} {
		jcode, _, raw := roundTwo(t, h, c.tool, key, c.state)
		if jcode != -32602 || !strings.Contains(raw, c.why) {
			t.Errorf("%s with %.12s…: %s; want -32602 saying %q", c.tool, c.state, raw, c.why)
		}
	}
	if n := r.srv.Tasks()[tasks.InputRequired]; n != 1 {
		t.Fatalf("tasks input_required: %d, want the round's task untouched", n)
	}
}

// TestTasksRoundStateTaskExpired: a state whose task expired at its TTL
// is -32602 naming the task.
func TestTasksRoundStateTaskExpired(t *testing.T) {
	clk := clock.NewMock()
	r, h := roundRig(t, clk)
	res := roundOne(t, h, map[string]any{})
	key, state := askedKey(t, res), res["requestState"].(string)
	st, _ := r.srv.host.bridges.sealer().open(state)
	clk.Add(61 * time.Second)
	jcode, _, raw := roundTwo(t, h, "e__sample", key, state)
	if jcode != -32602 || !strings.Contains(raw, st.Task) || !strings.Contains(raw, "gone") {
		t.Fatalf("round 2 after the TTL: %s; want -32602 naming task %s", raw, st.Task)
	}
}

// TestTasksRoundOneAbandoned: a host that never comes back leaves a task
// that ends at its TTL, its call cancelled (the server's call returns),
// and nothing kept.
func TestTasksRoundOneAbandoned(t *testing.T) {
	clk := clock.NewMock()
	r, h := roundRig(t, clk)
	res := roundOne(t, h, map[string]any{"hang": true})
	askedKey(t, res)
	if r.srv.calls.count() == 0 {
		t.Fatal("the task's call is not in flight after round 1")
	}
	clk.Add(59 * time.Second)
	if n := r.srv.Tasks()[tasks.InputRequired]; n != 1 {
		t.Fatalf("before the TTL: %d tasks input_required, want 1", n)
	}
	clk.Add(2 * time.Second)
	select {
	case <-r.srv.calls.idle():
	case <-time.After(testDeadline):
		t.Fatal("the task's call still runs after its TTL")
	}
	for st, n := range r.srv.Tasks() {
		if n != 0 {
			t.Errorf("after the TTL: %d tasks %s, want none", n, st)
		}
	}
}
