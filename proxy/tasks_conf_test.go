package proxy

import (
	"net/http"
	"testing"

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
