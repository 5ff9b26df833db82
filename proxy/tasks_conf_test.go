package proxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Regressions the conformance suite's tasks scenarios found through
// mcpkeep (docs/design.md §25).

// TestTasksInlineResultType: a call that an opted-in 2026-07-28 host makes
// and that ends within the grace period is answered as a call with
// resultType "complete", as that wire requires (tasks-lifecycle's
// tasks-sync-tool-call, wire-schema-valid).
func TestTasksInlineResultType(t *testing.T) {
	_, h := taskRig(t)
	jcode, res := callTool(t, h, "b__echo", map[string]any{"text": "hi"}, true)
	if jcode != 0 || res["content"] == nil {
		t.Fatalf("tools/call: %d %s", jcode, resultText(res))
	}
	if res["resultType"] != "complete" {
		t.Fatalf("inline answer's resultType = %v, want \"complete\": %s", res["resultType"], resultText(res))
	}
}

// TestTasksMethodsNeedExtension: tasks/get, tasks/update and tasks/cancel
// from a host that did not declare the extension are -32021, whatever the
// id (tasks-capability-negotiation's sep-2663-tasks-methods-non-declaring);
// one that did gets -32602 for an unknown id.
func TestTasksMethodsNeedExtension(t *testing.T) {
	_, h := taskRig(t)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": "gate-test"}
		if m == "tasks/update" {
			params["inputResponses"] = map[string]any{}
		}
		if jcode, _ := modern(t, h, m, "gate-test", params, false); jcode != -32021 {
			t.Errorf("%s without the extension: error %d, want -32021", m, jcode)
		}
		params = map[string]any{"taskId": "gate-test"}
		if jcode, _ := modern(t, h, m, "gate-test", params, true); jcode != -32602 {
			t.Errorf("%s with the extension, unknown id: error %d, want -32602", m, jcode)
		}
	}
}

// TestTasksNameHeaderMismatch: a tasks/get whose Mcp-Name disagrees with
// params.taskId is HTTP 400 with -32020 (tasks-request-headers'
// sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get); a matching
// one reaches the engine.
func TestTasksNameHeaderMismatch(t *testing.T) {
	_, h := taskRig(t)
	_, res := callTool(t, h, "a__hang", map[string]any{}, true)
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %s", resultText(res))
	}
	defer modern(t, h, "tasks/cancel", id, map[string]any{"taskId": id}, true)
	if jcode, got := modern(t, h, "tasks/get", id, map[string]any{"taskId": id}, true); jcode != 0 || got["taskId"] != id {
		t.Fatalf("matching Mcp-Name: error %d, %s", jcode, resultText(got))
	}
	body := map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": map[string]any{"taskId": id, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:           "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "0"},
		metaClientCapabilities:               map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}}}
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": "some-other-task"}
	code, jcode, raw := post(t, h, body, hdr)
	if code != http.StatusBadRequest || jcode != -32020 {
		t.Fatalf("mismatched Mcp-Name: HTTP %d, error %d: %s; want 400, -32020", code, jcode, raw)
	}
}

// taskToolRig serves server d, whose "tasks" block gives tools their own
// modes (docs/design.md §25): echo "required", sleep "always", the
// others the server's "never".
func taskToolRig(t *testing.T, stdio bool) *rig {
	t.Helper()
	r := newRigWith(t, Options{}, map[string]map[string]any{
		"d": {"tasks": map[string]any{"mode": "never", "tools": map[string]any{"echo": "required", "sleep": "always"}}},
	}, "d")
	r.stdio = stdio
	r.downstream = legacyVersion
	return r
}

// TestTasksToolPolicy: a tool's own mode wins over its server's; a
// "required" tool gives a host that declared the extension a task and
// one that did not -32021 naming the extension, never a plain call
// (tasks-required-task-error's sep-2663-server-returns-missing-capability-when-required).
func TestTasksToolPolicy(t *testing.T) {
	r := taskToolRig(t, false)
	h := r.handler()
	for _, c := range []struct {
		name  string
		args  map[string]any
		optIn bool
		code  int64
		task  bool
	}{
		{"d__echo", map[string]any{"text": "hi"}, false, -32021, false},
		{"d__echo", map[string]any{"text": "hi"}, true, 0, true},
		{"d__sleep", map[string]any{"ms": 10}, true, 0, true},
		{"d__sleep", map[string]any{"ms": 10}, false, 0, false},
		{"d__hang", map[string]any{}, true, -1, false}, // "never": a plain call; not made here (it hangs)
	} {
		if c.code == -1 {
			if got := r.srv.toolTaskMode(r.srv.taskPolicy("d"), c.name); got != "never" {
				t.Errorf("%s: mode %q, want the server's \"never\"", c.name, got)
			}
			continue
		}
		jcode, res := callTool(t, h, c.name, c.args, c.optIn)
		if jcode != c.code {
			t.Errorf("%s (opt-in %v): error %d, want %d: %s", c.name, c.optIn, jcode, c.code, resultText(res))
			continue
		}
		if got := res["resultType"] == "task"; jcode == 0 && got != c.task {
			t.Errorf("%s (opt-in %v): task %v, want %v: %s", c.name, c.optIn, got, c.task, resultText(res))
		}
		if id, _ := res["taskId"].(string); id != "" {
			pollTask(t, h, id)
		}
	}
}

// TestTasksRequiredToolLegacyHost: a 2025-11-25 host on stdio, which the
// fast path (§24) serves, that did not declare the extension gets -32021
// for a "required" tool, with data.requiredCapabilities naming it.
func TestTasksRequiredToolLegacyHost(t *testing.T) {
	r := taskToolRig(t, true)
	cs := r.host(legacyVersion, nil)
	r.waitApplied()
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "d__echo", Arguments: map[string]any{"text": "hi"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(je.Data), tasksExtension) {
		t.Fatalf("call of a required tool without the extension: %v, want -32021 naming %s", err, tasksExtension)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "d__sleep", Arguments: map[string]any{"ms": 1}})
	if err != nil || res.IsError {
		t.Fatalf("a plain call of another tool: %v %+v", err, res)
	}
}
