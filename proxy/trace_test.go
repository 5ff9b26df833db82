package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The host's trace context in _meta reaches the server (docs/design.md
// §27): on both eras, the fast path and the typed path, and on the replay of
// a call lost to a crash; with a Tracer, the server sees the attempt's own
// context, and the replay is attempt 2 after a wait.

const hostTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// addMetaTool gives r's server a a readOnly tool "meta" that answers with
// the _meta it received; on generation 1 it kills its connection instead.
func addMetaTool(r *rig, kills *atomic.Int32) {
	m := r.mems["a"]
	prev := m.Serve
	m.Serve = func(gen uint64, s *mcp.Server) {
		prev(gen, s)
		s.AddTool(&mcp.Tool{Name: "meta", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if gen == 1 {
					kills.Add(1)
					go m.Gen(gen).Kill() // Kill closes the session, which waits for this handler
					<-ctx.Done()
					return nil, ctx.Err()
				}
				b, _ := json.Marshal(req.Params.Meta)
				return textResult(string(b)), nil
			})
	}
}

// recTracer records the hooks' calls; each attempt rewrites the span id.
type recTracer struct {
	mu     sync.Mutex
	events []string
}

func (t *recTracer) add(s string) {
	t.mu.Lock()
	t.events = append(t.events, s)
	t.mu.Unlock()
}

func (t *recTracer) StartRequest(ctx context.Context, r mcpkeep.RequestInfo, tc mcpkeep.TraceContext) (context.Context, mcpkeep.RequestTrace, func(error)) {
	t.add(fmt.Sprintf("request %s %s server=%s parent=%s", r.Method, r.Name, r.Server, tc.Traceparent))
	return ctx, t, func(err error) { t.add(fmt.Sprintf("request end err=%v", err)) }
}

func (t *recTracer) StartAttempt(a mcpkeep.Attempt, tc *mcpkeep.TraceContext) func(error) {
	t.add(fmt.Sprintf("attempt %d gen=%d replay=%v", a.N, a.Generation, a.ReplayOf != nil))
	tc.Traceparent = fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", a.N)
	return func(error) {}
}

func (t *recTracer) StartWait(server, reason string) func() {
	t.add("wait " + reason)
	return func() { t.add("wait end") }
}

func TestTraceContextReachesServer(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, typed := range []bool{false, true} {
			for _, traced := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/typed=%v/tracer=%v", era, typed, traced), func(t *testing.T) {
					rec := &recTracer{}
					opts := Options{TypedRelay: typed}
					if traced {
						opts.Tracer = rec
					}
					r := newRig(t, opts, "a")
					var kills atomic.Int32
					addMetaTool(r, &kills)
					cs := r.host(era, nil)
					ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
					defer cancel()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__meta", Arguments: map[string]any{},
						Meta: mcp.Meta{"traceparent": hostTraceparent, "tracestate": "k=v", "baggage": "u=1", "other": "x"}})
					if err != nil {
						t.Fatalf("call: %v", err)
					}
					if res.IsError {
						t.Fatalf("call: %s", text(res))
					}
					if kills.Load() != 1 {
						t.Fatalf("generation 1 was killed %d times, want 1 (the replay)", kills.Load())
					}
					var got map[string]any
					if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
						t.Fatalf("meta %q: %v", text(res), err)
					}
					want := hostTraceparent
					if traced {
						want = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000002-01" // attempt 2's
					}
					if got["traceparent"] != want || got["tracestate"] != "k=v" || got["baggage"] != "u=1" {
						t.Errorf("server saw _meta %v, want traceparent %s, tracestate k=v, baggage u=1", got, want)
					}
					if _, ok := got["other"]; ok {
						t.Errorf("server saw a _meta key not of SEP-414: %v", got)
					}
					if !typed {
						// A second call, on the fast path on both eras (on
						// 2026-07-28 once the SDK served the session's _meta).
						served := r.srv.fast.served.Load()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__meta", Arguments: map[string]any{},
							Meta: mcp.Meta{"traceparent": hostTraceparent}})
						if err != nil || res.IsError {
							t.Fatalf("second call: %v", err)
						}
						if r.srv.fast.served.Load() != served+1 {
							t.Errorf("the second call did not take the fast path")
						}
						want := hostTraceparent
						if traced {
							want = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01"
						}
						var got map[string]any
						if err := json.Unmarshal([]byte(text(res)), &got); err != nil || got["traceparent"] != want {
							t.Errorf("the fast path's server saw %s, want traceparent %s", text(res), want)
						}
					}
					if !traced {
						return
					}
					rec.mu.Lock()
					defer rec.mu.Unlock()
					wantEv := []string{
						"request tools/call a__meta server=a parent=" + hostTraceparent,
						"attempt 1 gen=1 replay=false",
						"wait replay",
						"wait end",
						"attempt 2 gen=2 replay=true",
						"request end err=<nil>",
					}
					if !typed {
						wantEv = append(wantEv, "request tools/call a__meta server=a parent="+hostTraceparent,
							"attempt 1 gen=2 replay=false", "request end err=<nil>")
					}
					if fmt.Sprint(rec.events) != fmt.Sprint(wantEv) {
						t.Errorf("hooks:\n got %q\nwant %q", rec.events, wantEv)
					}
				})
			}
		}
	}
}

// TestHandedBackCallIsOneSpan: a call the fast path relays and then hands
// back to the SDK's server (a result it cannot vouch for) is one request
// span, not the fast path's and the SDK handler's (docs/design.md §27).
func TestHandedBackCallIsOneSpan(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			rec := &recTracer{}
			r := newRig(t, Options{Tracer: rec}, "a")
			m := r.mems["a"]
			prev := m.Serve
			m.Serve = func(gen uint64, s *mcp.Server) {
				prev(gen, s)
				s.AddTool(&mcp.Tool{Name: "res", InputSchema: objectSchema},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						// An embedded resource: not plain (fastcheck.go).
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{
							Resource: &mcp.ResourceContents{URI: "file:///x", Text: "x"}}}}, nil
					})
			}
			cs := r.host(era, nil)
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			var handed uint64
			for i := range 3 { // on 2026-07-28 the first call may go typed
				handed = r.srv.fast.handedBack.Load()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__res", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("call %d: %v %v", i, err, res)
				}
				if r.srv.fast.handedBack.Load() == handed+1 {
					break
				}
				if i == 2 {
					t.Fatal("no call was handed back by the fast path")
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			starts, ends := 0, 0
			for _, e := range rec.events {
				starts += strings.Count(e, "request tools/call")
				ends += strings.Count(e, "request end")
			}
			if starts != ends {
				t.Errorf("%d request spans started, %d ended: %q", starts, ends, rec.events)
			}
			// Each call is one request span: count the calls made.
			made := 0
			for _, e := range rec.events {
				if strings.HasPrefix(e, "attempt ") {
					made++
				}
			}
			if starts != made {
				t.Errorf("%d request spans for %d calls sent: %q", starts, made, rec.events)
			}
		})
	}
}
