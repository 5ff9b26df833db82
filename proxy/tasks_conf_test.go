package proxy

import "testing"

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
