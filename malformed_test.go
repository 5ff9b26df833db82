package mcpkeep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's answer is never taken for a transport failure
// (docs/design.md §19): an answer without a result, or with one that is
// no object, is that call's error, the server's fault, sent: never held
// for a replay (the tool ran), never a nil result.

// malformedShapes are the answers a server sends in place of its result
// (nil: the result left out).
var malformedShapes = map[string]json.RawMessage{"no result": nil, "null": json.RawMessage(`null`), "a string": json.RawMessage(`"x"`), "an array": json.RawMessage(`[]`)}

// breakAnswers makes the result of every answer that carries mark shape.
func breakAnswers(mark string, shape json.RawMessage) func(jsonrpc.Message) jsonrpc.Message {
	return func(m jsonrpc.Message) jsonrpc.Message {
		if r, ok := m.(*jsonrpc.Response); ok && bytes.Contains(r.Result, []byte(mark)) {
			return &jsonrpc.Response{ID: r.ID, Result: shape}
		}
		return m
	}
}

// TestMalformedAnswerIsASentFailure: a readOnly tool (replayed after a
// loss) whose answer is malformed fails at once with ErrMalformedAnswer,
// naming the server; it ran once, nothing is replayed, the server stays
// established. Both ways a call goes out (Call, CallRaw).
func TestMalformedAnswerIsASentFailure(t *testing.T) {
	for _, c := range callers {
		for shapeName, shape := range malformedShapes {
			t.Run(c.name+shapeName, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var ran atomic.Int32
					h := newHarness(t, nil)
					h.mem.Serve = func(gen uint64, s *mcp.Server) {
						s.AddTool(&mcp.Tool{Name: "look", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
							func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								ran.Add(1)
								return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked"}}}, nil
							})
					}
					h.mem.Fault = func(uint64) transport.Fault { return transport.Fault{Rewrite: breakAnswers("looked", shape)} }
					if err := h.start(); err != nil {
						t.Fatal(err)
					}
					h.wantState(fsm.Established)
					out := c.call(h, "look", nil)
					h.settle()
					r := resultOf(t, out)
					if !errors.Is(r.err, transport.ErrMalformedAnswer) || errors.Is(r.err, ErrConnectionLost) {
						t.Fatalf("err = %v, want ErrMalformedAnswer, not a loss", r.err)
					}
					if want := `server "srv"`; !bytes.Contains([]byte(r.err.Error()), []byte(want)) {
						t.Fatalf("err = %v, does not name %s", r.err, want)
					}
					if r.res != nil {
						t.Fatalf("a result beside the error: %+v", r.res)
					}
					if n := ran.Load(); n != 1 {
						t.Fatalf("the tool ran %d times, want 1", n)
					}
					if n := h.sup.CallsReplayed(); n != 0 {
						t.Fatalf("%d calls replayed", n)
					}
					h.wantState(fsm.Established)
					if err := h.dispose(); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}
