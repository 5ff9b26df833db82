package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tasks extension at the front (docs/design.md §25), over the
// 2026-07-28 HTTP front with raw requests: the go-sdk's client decodes a
// task as an empty CallToolResult, so the wire is read as JSON.

// taskRig serves servers a (tasks "always") and b (the default, auto with
// a grace of graceMs 100) over HTTP.
func taskRig(t *testing.T) (*rig, http.Handler) {
	t.Helper()
	r := newRigWith(t, Options{}, map[string]map[string]any{
		"a": {"tasks": map[string]any{"mode": "always", "ttlMs": 60000}},
		"b": {"tasks": map[string]any{"graceMs": 100}},
		"c": {"tasks": map[string]any{"mode": "never"}},
	}, "a", "b", "c")
	r.downstream = legacyVersion
	h := r.handler()
	return r, h
}

// modern posts a 2026-07-28 request; optIn declares the tasks extension.
func modern(t *testing.T, h http.Handler, method, name string, params map[string]any, optIn bool) (int64, map[string]any) {
	t.Helper()
	caps := map[string]any{}
	if optIn {
		caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
		caps["sampling"] = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:                   "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		hdr["Mcp-Name"] = name
	}
	code, jcode, raw := post(t, h, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, hdr)
	if code != http.StatusOK && jcode == 0 {
		t.Fatalf("%s: HTTP %d: %s", method, code, raw)
	}
	var msg struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &msg); err != nil {
		t.Fatalf("%s: %v: %s", method, err, raw)
	}
	return jcode, msg.Result
}

func callTool(t *testing.T, h http.Handler, name string, args map[string]any, optIn bool) (int64, map[string]any) {
	t.Helper()
	return modern(t, h, "tools/call", name, map[string]any{"name": name, "arguments": args}, optIn)
}

func taskGet(t *testing.T, h http.Handler, id string) (int64, map[string]any) {
	t.Helper()
	return modern(t, h, "tasks/get", id, map[string]any{"taskId": id}, true)
}

// pollTask polls tasks/get until the task is terminal, within the deadline.
func pollTask(t *testing.T, h http.Handler, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for time.Now().Before(deadline) {
		jcode, res := taskGet(t, h, id)
		if jcode != 0 {
			t.Fatalf("tasks/get %s: error %d", id, jcode)
		}
		switch res["status"] {
		case "completed", "failed", "cancelled":
			return res
		}
		time.Sleep(10 * time.Millisecond) // a host's poll interval, not a wait for a condition we could observe
	}
	t.Fatalf("task %s never finished", id)
	return nil
}

func resultText(res map[string]any) string {
	b, _ := json.Marshal(res)
	return string(b)
}

func TestTasksAdvertised(t *testing.T) {
	_, h := taskRig(t)
	_, res := modern(t, h, "server/discover", "", map[string]any{}, false)
	caps, _ := res["capabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext[tasksExtension]; !ok {
		t.Fatalf("server/discover does not advertise %s: %s", tasksExtension, resultText(res))
	}
}

// TestTasksLifecycle: an opted-in call of a server with mode "always"
// gets a CreateTaskResult at once; tasks/get reaches completed with the
// result inline; an unknown id is -32602.
func TestTasksLifecycle(t *testing.T) {
	_, h := taskRig(t)
	jcode, res := callTool(t, h, "a__sleep", map[string]any{"ms": 200}, true)
	if jcode != 0 || res["resultType"] != "task" || res["status"] != "working" {
		t.Fatalf("tools/call: %d %s", jcode, resultText(res))
	}
	id, _ := res["taskId"].(string)
	if id == "" || res["ttlMs"] != float64(60000) || res["pollIntervalMs"] == nil || res["ttl"] != nil || res["pollInterval"] != nil {
		t.Fatalf("CreateTaskResult fields: %s", resultText(res))
	}
	done := pollTask(t, h, id)
	if done["status"] != "completed" || done["resultType"] != "complete" || !strings.Contains(resultText(done["result"].(map[string]any)), "slept 200ms") {
		t.Fatalf("finished: %s", resultText(done))
	}
	if jcode, _ := taskGet(t, h, "no-such-task"); jcode != int64(-32602) {
		t.Fatalf("unknown id: error %d, want -32602", jcode)
	}
}

// TestTasksCancel: tasks/cancel acks with an empty result, the task ends
// cancelled, and a second cancel acks again.
func TestTasksCancel(t *testing.T) {
	_, h := taskRig(t)
	_, res := callTool(t, h, "a__hang", map[string]any{}, true)
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %s", resultText(res))
	}
	for range 2 {
		jcode, ack := modern(t, h, "tasks/cancel", id, map[string]any{"taskId": id}, true)
		if jcode != 0 || ack["resultType"] != "complete" || ack["taskId"] != nil || ack["status"] != nil {
			t.Fatalf("cancel ack: %d %s", jcode, resultText(ack))
		}
	}
	if done := pollTask(t, h, id); done["status"] != "cancelled" {
		t.Fatalf("after cancel: %s", resultText(done))
	}
}

// TestTasksOptInAndModes: without the opt-in a call is a call; "never"
// answers as a call; "auto" answers a quick call inline and a slow one
// with a task.
func TestTasksOptInAndModes(t *testing.T) {
	_, h := taskRig(t)
	for _, c := range []struct {
		name  string
		args  map[string]any
		optIn bool
		task  bool
	}{
		{"a__echo", map[string]any{"text": "hi"}, false, false},
		{"c__sleep", map[string]any{"ms": 200}, true, false},
		{"b__echo", map[string]any{"text": "hi"}, true, false},
		{"b__sleep", map[string]any{"ms": 1000}, true, true},
	} {
		jcode, res := callTool(t, h, c.name, c.args, c.optIn)
		if jcode != 0 {
			t.Fatalf("%s: error %d", c.name, jcode)
		}
		if got := res["resultType"] == "task"; got != c.task {
			t.Errorf("%s (opt-in %v): task %v, want %v: %s", c.name, c.optIn, got, c.task, resultText(res))
		}
		if !c.task && res["content"] == nil {
			t.Errorf("%s: no content in the inline answer: %s", c.name, resultText(res))
		}
	}
}

// TestTasksInReadyz: /readyz counts the tasks by state.
func TestTasksInReadyz(t *testing.T) {
	r, h := taskRig(t)
	_, res := callTool(t, h, "a__hang", map[string]any{}, true)
	if res["resultType"] != "task" {
		t.Fatalf("no task: %s", resultText(res))
	}
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil)
	w := httptest.NewRecorder()
	r.srv.Health().Handler(r.srv.getPool, "").ServeHTTP(w, req)
	var rep Readiness
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tasks["working"] != 1 || rep.Tasks["completed"] != 0 {
		t.Fatalf("/readyz tasks %v, want working 1: %s", rep.Tasks, w.Body.String())
	}
}

// TestTasksInputRequest: a server's sampling request during a task's
// call becomes an input request of the task; the host's tasks/update
// answer reaches the server and the task completes with its result.
func TestTasksInputRequest(t *testing.T) {
	_, h := taskRig(t)
	_, res := callTool(t, h, "a__sample", map[string]any{}, true)
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %s", resultText(res))
	}
	var got map[string]any
	deadline := time.Now().Add(testDeadline)
	for {
		_, got = taskGet(t, h, id)
		if got["status"] != "working" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // a host's poll interval
	}
	reqs, _ := got["inputRequests"].(map[string]any)
	if got["status"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("task: %s", resultText(got))
	}
	var key string
	for k, v := range reqs {
		key = k
		if m, _ := v.(map[string]any); m["method"] != "sampling/createMessage" {
			t.Fatalf("input request %s: %v", k, v)
		}
	}
	answer := map[string]any{key: map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "yes"}}}
	jcode, ack := modern(t, h, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": answer}, true)
	if jcode != 0 || ack["resultType"] != "complete" {
		t.Fatalf("update: %d %s", jcode, resultText(ack))
	}
	done := pollTask(t, h, id)
	if done["status"] != "completed" || !strings.Contains(resultText(done), "sampled: yes") {
		t.Fatalf("after the answer: %s", resultText(done))
	}
}

// TestTasksAdvertisedWhenMirrored: `mcpkeep run` mirrors its server's
// capabilities, and still advertises mcpkeep's tasks extension.
func TestTasksAdvertisedWhenMirrored(t *testing.T) {
	for _, c := range []*mcp.ServerCapabilities{nil, {Logging: &mcp.LoggingCapabilities{}}} {
		if _, ok := mirroredCaps(c).Extensions[tasksExtension]; !ok {
			t.Errorf("mirroredCaps(%+v) lacks %s", c, tasksExtension)
		}
	}
}
