package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that answers a tools/call with a task (resultType "task")
// although mcpkeep did not declare the tasks extension to it for that
// call (docs/design.md §25): the host gets an isError result naming the
// server and saying so, on every path, and nothing else is cancelled.

// unaskedTask is the rogue tool's answer: a task nobody asked for.
const unaskedTask = `{"resultType":"task","taskId":"srv-7","status":"working","ttlMs":60000,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}`

// rogueRig is a rig whose server "files" has the tool "rogue", answered
// with unaskedTask whatever the call declares, beside its usual tools;
// extra is more of its configuration.
func rogueRig(t *testing.T, opts Options, extra map[string]any) *rig {
	t.Helper()
	r := newRigWith(t, opts, map[string]map[string]any{"files": extra}, "files")
	serve := r.mems["files"].Serve
	r.mems["files"].Serve = func(gen uint64, s *mcp.Server) {
		serve(gen, s)
		s.AddTool(&mcp.Tool{Name: "rogue", InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("never sent"), nil
			})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" && p.Name == "rogue" {
					return &relayedResult{raw: json.RawMessage(unaskedTask)}, nil
				}
				return next(ctx, method, req)
			}
		})
	}
	return r
}

// wantUnasked checks a host's answer is the unasked task's error.
func wantUnasked(t *testing.T, what string, isError bool, text string) {
	t.Helper()
	if !isError || !strings.Contains(text, `server "files"`) || !strings.Contains(text, "with a task it was not asked for") {
		t.Fatalf("%s: isError %v, text %q; want an error naming the server and the unasked task", what, isError, text)
	}
}

// typedText is the text of a result's text content.
func typedText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wireText is the text of a result's text content, as JSON decoded.
func wireText(res map[string]any) string {
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, _ := c.(map[string]any); m["type"] == "text" {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestUnaskedTaskIsAnError: on the fast path (stdio and in-memory hosts,
// both eras) and the typed path (TypedRelay), the host gets an isError
// result; the server's other calls go on, and no handle or hold is left.
func TestUnaskedTaskIsAnError(t *testing.T) {
	for _, era := range []string{legacyVersion, modernVersion, modernVersion + " stdio"} {
		for _, typed := range []bool{false, true} {
			name := era
			if typed {
				name += " typed"
			}
			t.Run(name, func(t *testing.T) {
				era, stdio := strings.CutSuffix(era, " stdio")
				r := rogueRig(t, Options{TypedRelay: typed}, nil)
				r.downstream, r.stdio = era, stdio
				cs := r.host(era, nil)
				r.waitApplied()
				ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				defer cancel()
				// The fast path takes a call once the front knows the
				// host's request _meta (fast.go): warm up until it took one.
				for warm := r.srv.fast.served.Load(); !typed && r.srv.fast.served.Load() == warm; {
					if ctx.Err() != nil {
						t.Fatal("the fast path took no echo call")
					}
					call(t, cs, "files__echo", map[string]any{"text": "warm"})
				}
				served := r.srv.fast.served.Load()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__rogue", Arguments: map[string]any{}})
				if err != nil {
					t.Fatalf("rogue: %v, want an isError result", err)
				}
				wantUnasked(t, "rogue", res.IsError, typedText(res))
				if fast := r.srv.fast.served.Load() > served; fast == typed {
					t.Fatalf("served by the fast path: %v, want %v", fast, !typed)
				}
				// One peer's fault costs only itself: the server's next call
				// is answered on the same generation.
				if text, isErr := call(t, cs, "files__echo", map[string]any{"text": "after"}); isErr || !strings.Contains(text, "after") {
					t.Fatalf("echo after the rogue answer: %q (isError %v)", text, isErr)
				}
				sup, _ := r.srv.getPool().Supervisor("files")
				if st := sup.State(); st.Gen != 1 || st.InFlight != 0 {
					t.Fatalf("server generation %d, in flight %d; want 1 and 0", st.Gen, st.InFlight)
				}
				if held, reserved := r.srv.tasks.relay.size(); held != 0 || reserved != 0 {
					t.Fatalf("relay table holds %d (%d reserved)", held, reserved)
				}
			})
		}
	}
}

// TestUnaskedTaskOverHTTP: a 2026-07-28 host over Streamable HTTP without
// the extension (the HTTP fast path before a 2026-07-28 server, the typed
// path before a legacy one), and one with it whose call mcpkeep keeps as
// its own task (mode always; the server has no extension): the first gets
// the error as the call's result, the second as its task's.
func TestUnaskedTaskOverHTTP(t *testing.T) {
	for _, era := range []string{legacyVersion, modernVersion} {
		t.Run(era, func(t *testing.T) {
			r := rogueRig(t, Options{}, map[string]any{"tasks": map[string]any{"mode": "always"}})
			r.downstream = era
			h := r.handler()
			served := r.srv.fast.served.Load()
			jcode, res := callTool(t, h, "files__rogue", map[string]any{}, false)
			isErr, _ := res["isError"].(bool)
			if jcode != 0 {
				t.Fatalf("without the extension: JSON-RPC error %d", jcode)
			}
			wantUnasked(t, "without the extension", isErr, wireText(res))
			if fast := r.srv.fast.served.Load() > served; fast != (era == modernVersion) {
				t.Fatalf("served by the HTTP fast path: %v", fast)
			}

			jcode, res = callTool(t, h, "files__rogue", map[string]any{}, true)
			id, _ := res["taskId"].(string)
			if jcode != 0 || res["resultType"] != "task" || id == "" {
				t.Fatalf("with the extension: %d %s", jcode, resultText(res))
			}
			done := pollTask(t, h, id)
			inner, _ := done["result"].(map[string]any)
			isErr, _ = inner["isError"].(bool)
			if done["status"] != "completed" {
				t.Fatalf("the kept task: %s", resultText(done))
			}
			wantUnasked(t, "the kept task's result", isErr, wireText(inner))
		})
	}
}

// TestUnaskedTaskError: the error matches ErrUnaskedTask and names the
// server, the tool and the server's task id.
func TestUnaskedTaskError(t *testing.T) {
	err := unaskedRaw("files", "files__rogue", json.RawMessage(unaskedTask))
	var ue *UnaskedTaskError
	if !errors.Is(err, ErrUnaskedTask) || !errors.As(err, &ue) || ue.Server != "files" || ue.Tool != "files__rogue" || ue.TaskID != "srv-7" {
		t.Fatalf("%v (%#v)", err, ue)
	}
	for _, raw := range []string{`{"content":[{"type":"text","text":"task"}]}`, `{"resultType":"complete","content":[]}`, `not json "task"`} {
		if err := unaskedRaw("files", "t", json.RawMessage(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
}
