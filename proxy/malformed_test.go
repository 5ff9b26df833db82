package proxy

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMalformedAnswerIsTheCallsError: a server's answer without a result
// (`{"jsonrpc":"2.0","id":3}`) to a tools/call is that call's error, named
// as the server's fault, the same through the fast path and the typed
// path, on both eras: never a nil result (on 2026-07-28 the SDK's server
// panics on one, taking the process down), and the session serves on.
func TestMalformedAnswerIsTheCallsError(t *testing.T) {
	for _, era := range []string{legacyVersion, "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			var got []string
			for _, typed := range []bool{false, true} {
				r := fastRig(t, Options{TypedRelay: typed})
				r.downstream = era
				r.mems["files"].Fault = func(uint64) transport.Fault {
					return transport.Fault{Rewrite: func(m jsonrpc.Message) jsonrpc.Message {
						if resp, ok := m.(*jsonrpc.Response); ok && bytes.Contains(resp.Result, []byte("break-me")) {
							return &jsonrpc.Response{ID: resp.ID}
						}
						return m
					}}
				}
				h := newFastHost(r, era)
				r.waitApplied()
				ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				defer cancel()
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]any{"text": "break-me"}})
				if err != nil {
					t.Fatalf("typed %v: %v", typed, err)
				}
				text := outcomeOf(t, res, nil)
				if !res.IsError || !strings.Contains(text, `server \"files\"`) || !strings.Contains(text, "malformed") {
					t.Fatalf("typed %v: %s, want an error naming the server's malformed answer", typed, text)
				}
				got = append(got, text)
				if out, isErr := call(t, h.cs, "files__echo", map[string]any{"text": "after"}); out != "after" || isErr {
					t.Fatalf("typed %v: after: %q (error %v)", typed, out, isErr)
				}
			}
			if got[0] != got[1] {
				t.Fatalf("the fast path answered\n%s\nthe typed path\n%s", got[0], got[1])
			}
		})
	}
}
