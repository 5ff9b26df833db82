package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/fsm"
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

// contentTools are tools whose results hold every kind of content.
func contentTools(s *mcp.Server) {
	results := map[string]*mcp.CallToolResult{
		"text":  {Content: []mcp.Content{&mcp.TextContent{Text: "a <b> & \"c\"\nd", Meta: mcp.Meta{"k": "v"}}}},
		"image": {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{0, 1, 2, 255}, MIMEType: "image/png"}}},
		"audio": {Content: []mcp.Content{&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}}},
		"link": {Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///x", Name: "x", Title: "X", MIMEType: "text/plain",
			Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}}}},
		"embedded": {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", MIMEType: "text/plain", Text: "y"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///z", Blob: []byte{9, 8}}}}},
		"structured": {Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1.0, "list": []any{"a", nil, true}}},
		"failing":    {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}},
		"meta":       {Meta: mcp.Meta{"trace": "abc", "nested": map[string]any{"x": 1.0}}, Content: []mcp.Content{&mcp.TextContent{Text: "m"}}},
		"empty":      {Content: []mcp.Content{}},
	}
	for name, res := range results {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	s.AddTool(&mcp.Tool{Name: "args", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(string(req.Params.Arguments)), nil
		})
	s.AddTool(&mcp.Tool{Name: "refuse", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32602, Message: "bad arguments", Data: json.RawMessage(`{"field":"x"}`)}
		})
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
	tools := []string{"text", "image", "audio", "link", "embedded", "structured", "failing", "meta", "empty",
		"args", "caps", "sample", "elicit", "listroots", "refuse", "closing32003", "closing32004"}
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				serve := r.mem.Serve
				r.mem.Serve = func(gen uint64, s *mcp.Server) { serve(gen, s); contentTools(s) }
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

func init() {
	raceTable = append(raceTable,
		replayRow("raw calls (CallRaw): a lost call of a readOnlyHint or idempotentHint tool is sent once more on the next generation; one without is not",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				look, put, write := goCallRaw(h, "look", nil), goCallRaw(h, "put", nil), goCallRaw(h, "write", nil)
				h.settle()
				if n := rawSent(h); n != 3 {
					t.Fatalf("%d raw requests on gen 1, want 3", n)
				}
				h.mem.Gen(1).Kill()
				h.settle()
				w := resultOf(t, write)
				if !errors.Is(w.err, ErrConnectionLost) {
					t.Fatalf("write = %v, want ErrConnectionLost (no hints: never replayed)", w.err)
				}
				h.advance(time.Second) // the retry: gen 2
				h.wantState(fsm.Established)
				for tool, c := range map[string]<-chan callResult{"look": look, "put": put} {
					res := resultOf(t, c)
					if res.err != nil || resultText(res.res) != tool+" on gen 2" {
						t.Fatalf("%s = %v, %v; want gen 2's answer", tool, resultText(res.res), res.err)
					}
					if r.got(1, tool) != 1 || r.got(2, tool) != 1 {
						t.Fatalf("%s: gen 1 got %d calls, gen 2 %d; want 1 and 1", tool, r.got(1, tool), r.got(2, tool))
					}
				}
				if r.got(2, "write") != 0 || h.sup.CallsReplayed() != 2 {
					t.Fatalf("write replayed %d times; CallsReplayed = %d, want 0 and 2", r.got(2, "write"), h.sup.CallsReplayed())
				}
			}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("raw calls (CallRaw): the crash before the write: never sent, the outage path, nothing replayed",
			nil, nil, func(t *testing.T, h *harness, r *replayTools) {
				release := make(chan struct{})
				h.sup.send(message{kind: mInspect, probe: func() { <-release }}) // hold the loop
				h.mem.Gen(1).Kill()
				synctest.Wait() // the SDK has seen the end; the loop has not
				c := goCallRaw(h, "look", nil)
				synctest.Wait()
				close(release)
				h.settle()
				res := resultOf(t, c)
				var nc *NotConnectedError
				if !errors.As(res.err, &nc) || errors.Is(res.err, ErrConnectionLost) {
					t.Fatalf("look = %v, want a NotConnectedError (never sent)", res.err)
				}
				if r.got(1, "look") != 0 || h.sup.CallsReplayed() != 0 {
					t.Fatalf("sent %d, replayed %d", r.got(1, "look"), h.sup.CallsReplayed())
				}
			}, cEst, eLost, lBack, bDisp, dDone),
	)
}
