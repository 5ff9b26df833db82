package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Race rows R37 (docs/design.md §7, §21): safe replay of a call lost to
// its server's crash. Each generation's server offers look (readOnlyHint),
// put (idempotentHint) and write (no hints); replayTools counts their
// calls per generation and makes the tools of chosen generations hang, so
// a call is in flight when the test ends its generation.

// replayTools is the scripted tools of one row.
type replayTools struct {
	mu    sync.Mutex
	calls map[string]int // "gen/tool" → calls received
	hang  map[uint64]bool
}

func (r *replayTools) reset(hang ...uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls, r.hang = map[string]int{}, map[uint64]bool{}
	for _, g := range hang {
		r.hang[g] = true
	}
}

func (r *replayTools) got(gen uint64, tool string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[fmt.Sprintf("%d/%s", gen, tool)]
}

func (r *replayTools) serve(gen uint64, s *mcp.Server) {
	for _, t := range []struct {
		name string
		ann  *mcp.ToolAnnotations
	}{
		{"look", &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{"put", &mcp.ToolAnnotations{IdempotentHint: true}},
		{"write", nil},
	} {
		s.AddTool(&mcp.Tool{Name: t.name, InputSchema: map[string]any{"type": "object"}, Annotations: t.ann},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				r.mu.Lock()
				r.calls[fmt.Sprintf("%d/%s", gen, t.name)]++
				hang := r.hang[gen]
				r.mu.Unlock()
				if hang {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s on gen %d", t.name, gen)}}}, nil
			})
	}
}

// replayRow makes a row over fresh replayTools whose listed generations
// hang.
func replayRow(name string, hang []uint64, opts func(*Options), run func(t *testing.T, h *harness, r *replayTools), steps ...string) raceRow {
	r := &replayTools{}
	return raceRow{
		race: "R37", name: name,
		opts: func(o *Options) {
			r.reset(hang...)
			if opts != nil {
				opts(o)
			}
		},
		serve:     r.serve,
		run:       func(t *testing.T, h *harness, _ error) { run(t, h, r) },
		wantSteps: steps,
	}
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

// goCall calls tool on its own goroutine.
func goCall(h *harness, tool string, opts *CallOptions) <-chan callResult {
	c := make(chan callResult, 1)
	go func() {
		res, err := h.sup.Call(context.Background(), tool, nil, opts)
		c <- callResult{res, err}
	}()
	return c
}

func resultOf(t *testing.T, c <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	default:
		t.Fatal("the call has not returned")
		return callResult{}
	}
}

// callers are the two ways a call goes out: Call, and CallRaw (the
// relay's, docs/design.md §24), whose loss and replay are Call's. The
// first rows run with each.
var callers = []struct {
	name string
	call func(h *harness, tool string, opts *CallOptions) <-chan callResult
	raw  bool // the calls must go out as raw requests
}{{"", goCall, false}, {"raw calls (CallRaw): ", goCallRaw, true}}

func init() {
	for _, c := range callers {
		call, raw := c.call, c.raw
		raceTable = append(raceTable,
			replayRow(c.name+"a lost call of a readOnlyHint or idempotentHint tool is sent once more on the next generation; one without is not",
				[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
					look, put, write := call(h, "look", nil), call(h, "put", nil), call(h, "write", nil)
					h.settle()
					if n := rawSent(h); raw && n != 3 {
						t.Fatalf("%d raw requests on gen 1, want the 3 calls", n)
					}
					h.mem.Gen(1).Kill() // after the write: the server had the calls
					h.settle()
					w := resultOf(t, write)
					if !errors.Is(w.err, ErrConnectionLost) {
						t.Fatalf("write = %v, want ErrConnectionLost (no hints: never replayed)", w.err)
					}
					select {
					case l := <-look:
						t.Fatalf("look returned during the outage: %v", l.err)
					default:
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
					if r.got(2, "write") != 0 {
						t.Fatal("write was replayed")
					}
					if n := h.sup.CallsReplayed(); n != 2 {
						t.Fatalf("CallsReplayed = %d, want 2", n)
					}
					if logs := h.logsNamed("call replayed"); len(logs) != 2 || logs[0].Attrs["gen"] != "2" {
						t.Fatalf("logs %+v", logs)
					}
				}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

			replayRow(c.name+"the crash before the write: never sent, the outage path as before, nothing replayed",
				nil, nil, func(t *testing.T, h *harness, r *replayTools) {
					release := make(chan struct{})
					h.sup.send(message{kind: mInspect, probe: func() { <-release }}) // hold the loop
					h.mem.Gen(1).Kill()
					synctest.Wait() // the SDK has seen the end; the loop has not
					c := call(h, "look", nil)
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
				}, cEst, eLost, lBack, bDisp, dDone))
	}
	raceTable = append(raceTable,
		replayRow("a crash during the replay: the call fails, never replayed twice",
			[]uint64{1, 2}, nil, func(t *testing.T, h *harness, r *replayTools) {
				c := goCall(h, "look", nil)
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				h.advance(time.Second) // gen 2: the replay hangs there
				if r.got(2, "look") != 1 {
					t.Fatalf("gen 2 got %d calls, want the replay", r.got(2, "look"))
				}
				h.mem.Gen(2).Kill()
				h.settle()
				res := resultOf(t, c)
				if !errors.Is(res.err, ErrConnectionLost) {
					t.Fatalf("look = %v, want ErrConnectionLost", res.err)
				}
				h.advance(2 * time.Second) // gen 3
				h.wantState(fsm.Established)
				if r.got(3, "look") != 0 || h.sup.CallsReplayed() != 1 {
					t.Fatalf("gen 3 got %d calls, replayed %d; want 0 and 1", r.got(3, "look"), h.sup.CallsReplayed())
				}
			}, cEst, eLost, lBack, bRetry, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("dispose while the lost call waits for its replay: it fails with the loss, at once",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				c := goCall(h, "look", nil)
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				h.wantState(fsm.BackingOff)
				go func() { _ = h.sup.Dispose(context.Background()) }()
				h.settle()
				res := resultOf(t, c)
				if !errors.Is(res.err, ErrConnectionLost) || !strings.Contains(res.err.Error(), "not repeated") {
					t.Fatalf("look = %v, want the loss, not repeated", res.err)
				}
				if h.sup.CallsReplayed() != 0 {
					t.Fatal("counted a replay never sent")
				}
			}, cEst, eLost, lBack, bDisp, dDone),

		replayRow("dispose while the replay runs: it fails with the loss, and Dispose joins it",
			[]uint64{1, 2}, nil, func(t *testing.T, h *harness, r *replayTools) {
				c := goCall(h, "look", nil)
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				h.advance(time.Second)
				if r.got(2, "look") != 1 {
					t.Fatal("no replay on gen 2")
				}
				done := make(chan error, 1)
				go func() { done <- h.sup.Dispose(context.Background()) }()
				h.settle()
				res := resultOf(t, c)
				if !errors.Is(res.err, ErrConnectionLost) {
					t.Fatalf("look = %v, want ErrConnectionLost", res.err)
				}
				if err := <-done; err != nil {
					t.Fatalf("Dispose: %v", err)
				}
			}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("replaySafeCalls off (NoReplay): a readOnlyHint tool's lost call fails as any other",
			[]uint64{1}, func(o *Options) { o.NoReplay = true }, func(t *testing.T, h *harness, r *replayTools) {
				c := goCall(h, "look", nil)
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				if res := resultOf(t, c); !errors.Is(res.err, ErrConnectionLost) {
					t.Fatalf("look = %v", res.err)
				}
			}, cEst, eLost, lBack, bDisp, dDone),

		replayRow("the replay waits no longer than its bound (the connect timeout here): the loss, not repeated",
			[]uint64{1}, func(o *Options) {
				o.Policy.InitialDelay, o.Policy.MaxDelay, o.Policy.Stability = 10*time.Second, 10*time.Second, 10*time.Second
			},
			func(t *testing.T, h *harness, r *replayTools) {
				c := goCall(h, "look", nil)
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				h.advance(4 * time.Second)
				select {
				case res := <-c:
					t.Fatalf("returned before its bound: %v", res.err)
				default:
				}
				h.advance(time.Second) // 5 s: the connect timeout
				res := resultOf(t, c)
				if !errors.Is(res.err, ErrConnectionLost) || !strings.Contains(res.err.Error(), "not repeated") {
					t.Fatalf("look = %v", res.err)
				}
			}, cEst, eLost, lBack, bDisp, dDone),
	)
}
