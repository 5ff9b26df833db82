package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallRaw (docs/design.md §24): the same answers as Call, sent beside the
// SDK's session; Call's outages, loss and replay.

// rawSent is how many raw requests the live generation's connection made.
func rawSent(h *harness) uint64 {
	g := h.sup.live.Load()
	if g == nil || g.raw == nil {
		return 0
	}
	return g.raw.Sent()
}

// decodeRaw is CallRaw's result as the SDK would decode it.
func decodeRaw(raw json.RawMessage, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the raw result %s: %w", raw, err)
	}
	return &res, nil
}

// asJSON is a result as the SDK encodes it, decoded generically (a
// comparison of what the two carry, whatever their Go types hold).
func asJSON(t *testing.T, res *mcp.CallToolResult) any {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// closingTools answer with the SDK's own closing codes: the server's
// answer, not the connection's end.
func closingTools(s *mcp.Server) {
	for _, code := range []int64{codeClientClosing, codeServerClosing} {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("closing%d", -code), InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: code, Message: "a closing code from the server itself"}
			})
	}
}

// TestCallRawMatchesCall: for every kind of content, the server's requests
// to the host (2026-07-28: input requests), the client's capabilities the
// server sees and the server's JSON-RPC errors, CallRaw's answer is Call's,
// and CallRaw sent its calls as raw requests.
func TestCallRawMatchesCall(t *testing.T) {
	tools := append(slices.Clone(fixture.ContentToolNames), "caps", "sample", "elicit", "listroots", "closing32003", "closing32004")
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				serve := r.mem.Serve
				r.mem.Serve = func(gen uint64, s *mcp.Server) { serve(gen, s); fixture.ContentTools(s); closingTools(s) }
				r.mustStart(t)
				ctx := context.Background()
				args := json.RawMessage(`{"text":"x <y>","n":[1,2.5e3]}`)
				for _, tool := range tools {
					typed, terr := r.sup.Call(ctx, tool, args, nil)
					before := rawSent(r.harness)
					raw, rerr := decodeRaw(r.sup.CallRaw(ctx, tool, args, nil))
					if rawSent(r.harness) <= before {
						t.Fatalf("%s: CallRaw made no raw request", tool)
					}
					if fmt.Sprint(terr) != fmt.Sprint(rerr) {
						t.Fatalf("%s: CallRaw's error %v, Call's %v", tool, rerr, terr)
					}
					if terr != nil {
						// A server's closing code is its answer, not a
						// connection that closed: sent, never replayed.
						if errors.Is(rerr, mcp.ErrConnectionClosed) || errors.Is(rerr, ErrConnectionLost) {
							t.Fatalf("%s: %v reads as the connection's end", tool, rerr)
						}
						continue
					}
					if diff := cmp.Diff(asJSON(t, typed), asJSON(t, raw)); diff != "" {
						t.Fatalf("%s: CallRaw's result differs from Call's (-Call +CallRaw):\n%s", tool, diff)
					}
				}
				// The server saw the same client capabilities both ways
				// (2026-07-28: the session's _meta fields on a raw call).
				r.f.mu.Lock()
				caps := r.f.caps[1]
				r.f.mu.Unlock()
				if len(caps) != 2 || !cmp.Equal(caps[0], caps[1]) {
					t.Fatalf("the server saw capabilities %+v, want the same twice", caps)
				}
				if got := r.host.named("sample"); len(got) != 2 || got[0] != got[1] {
					t.Fatalf("the host's sampling handler saw %q, want the same request twice", got)
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestCallRawProgressBeforeResult: the server's progress reaches the
// handler in order and before CallRaw returns, with no linger (both travel
// the same stream, read in order).
func TestCallRawProgressBeforeResult(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				r.mustStart(t)
				var mu sync.Mutex
				var got []float64
				opts := &CallOptions{Progress: func(p *mcp.ProgressNotificationParams) {
					mu.Lock()
					got = append(got, p.Progress)
					mu.Unlock()
				}}
				res, err := decodeRaw(r.sup.CallRaw(context.Background(), "progress", nil, opts))
				if err != nil || resultText(res) != "done" {
					t.Fatalf("progress = %+v, %v", res, err)
				}
				mu.Lock()
				defer mu.Unlock()
				if !cmp.Equal(got, []float64{1, 2}) {
					t.Fatalf("progress seen before the result: %v, want [1 2]", got)
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestCallRawCancelled: cancelling the caller's context cancels the
// server's handler (notifications/cancelled for the raw request).
func TestCallRawCancelled(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				r.mustStart(t)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					_, err := r.sup.CallRaw(ctx, "block", nil, nil)
					errc <- err
				}()
				r.settle()
				cancel()
				r.settle()
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Fatalf("CallRaw = %v, want context.Canceled", err)
				}
				if got := r.f.seen(1, "cancelled"); len(got) != 1 {
					t.Fatalf("the server's handler was not cancelled: %q", got)
				}
				r.wantState(fsm.Established)
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// goCallRaw is goCall with CallRaw, its result decoded.
func goCallRaw(h *harness, tool string, opts *CallOptions) <-chan callResult {
	c := make(chan callResult, 1)
	go func() {
		res, err := decodeRaw(h.sup.CallRaw(context.Background(), tool, nil, opts))
		c <- callResult{res, err}
	}()
	return c
}
