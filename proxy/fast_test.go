package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path (docs/design.md §24): a Serve host's tools/call relayed as
// JSON gets what the typed path gives, for every kind of content, the
// server's errors, progress, cancellation, a loss and the server's
// requests to the host.

// fastTools adds fixture.ContentTools and a tool that sends progress.
func fastTools(s *mcp.Server) {
	fixture.ContentTools(s)
	s.AddTool(&mcp.Tool{Name: "steps", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
				}
			}
			return textResult("stepped"), nil
		})
}

// fastRig is a rig whose servers offer fastTools too, and "wait", whose
// calls are reported on arrived and, once cancelled, on cancelled.
func fastRig(t *testing.T, opts Options) *rig {
	r, _ := fastRigWaiting(t, opts)
	return r
}

type waitTool struct{ arrived, cancelled chan struct{} }

func fastRigWaiting(t *testing.T, opts Options) (*rig, *waitTool) {
	t.Helper()
	r := newRig(t, opts, "files")
	w := &waitTool{arrived: make(chan struct{}, 16), cancelled: make(chan struct{}, 16)}
	serve := r.mems["files"].Serve
	r.mems["files"].Serve = func(gen uint64, s *mcp.Server) {
		serve(gen, s)
		fastTools(s)
		s.AddTool(&mcp.Tool{Name: "wait", InputSchema: objectSchema},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				w.arrived <- struct{}{}
				<-ctx.Done()
				w.cancelled <- struct{}{}
				return nil, ctx.Err()
			})
	}
	return r, w
}

// await takes one report of c, failing after testDeadline.
func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(testDeadline):
		t.Fatalf("%s: never", what)
	}
}

// hostOf connects a host on era that answers sampling and collects
// progress.
type fastHost struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []string
}

func newFastHost(r *rig, era string) *fastHost {
	h := &fastHost{}
	h.cs = r.host(era, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "host answers"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, fmt.Sprintf("%v %v/%v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message))
			h.mu.Unlock()
		},
	})
	return h
}

// takeProgress returns the progress heard, once n notifications came (the
// host's SDK hands notifications to its handler on a queue of their own:
// a result can overtake the last of them there).
func (h *fastHost) takeProgress(n int) []string {
	deadline := time.Now().Add(testDeadline)
	for {
		h.mu.Lock()
		if len(h.progress) >= n || time.Now().After(deadline) {
			p := h.progress
			h.progress = nil
			h.mu.Unlock()
			return p
		}
		h.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// outcomeOf is a call's answer in comparable form: the result as JSON, or
// the error's text.
func outcomeOf(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		return "error: " + err.Error()
	}
	data, merr := json.Marshal(res)
	if merr != nil {
		t.Fatal(merr)
	}
	return string(data)
}

// typedContent are the content tools whose results the fast path hands
// to the SDK's server: content of kinds other than text, image, audio.
var typedContent = map[string]bool{"link": true, "embedded": true}

// TestFastPathMatchesTypedPath: each tool's answer through the fast path
// is the typed path's (a proxy with TypedRelay beside it), the progress
// the host hears too; the plain calls never go through the SDK's server.
func TestFastPathMatchesTypedPath(t *testing.T) {
	tools := append(slices.Clone(fixture.ContentToolNames), "sample", "steps")
	for _, era := range []string{legacyVersion, "2026-07-28", "2026-07-28 stdio"} {
		t.Run(era, func(t *testing.T) {
			era, stdio := strings.CutSuffix(era, " stdio") // a stdio host's reader diverts its calls (fast.go)
			fast, typed := fastRig(t, Options{}), fastRig(t, Options{TypedRelay: true})
			fast.downstream, typed.downstream, fast.stdio = era, era, stdio
			fh, th := newFastHost(fast, era), newFastHost(typed, era)
			fast.waitApplied()
			typed.waitApplied()
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			for _, tool := range tools {
				params := &mcp.CallToolParams{Name: "files__" + tool, Arguments: map[string]any{"text": "x <y>", "n": []any{1, 2.5e3}}}
				params.SetProgressToken("tok-" + tool)
				served, handed := fast.srv.fast.served.Load(), fast.srv.fast.handedBack.Load()
				fres, ferr := fh.cs.CallTool(ctx, params)
				tres, terr := th.cs.CallTool(ctx, params)
				if got, want := outcomeOf(t, fres, ferr), outcomeOf(t, tres, terr); got != want {
					t.Fatalf("%s: the fast path answered\n%s\nthe typed path\n%s", tool, got, want)
				}
				if fast.srv.fast.served.Load() != served+1 {
					t.Fatalf("%s: not served by the fast path", tool)
				}
				// A 2026-07-28 server's input request reaches a 2026-07-28
				// host through the SDK's server (handed back), and so do
				// links and embedded resources (fastcheck.go: not known to
				// be plain); every other answer goes out as the server sent it.
				wantHanded := handed
				if tool == "sample" && era >= "2026-07-28" || typedContent[tool] {
					wantHanded++
				}
				if got := fast.srv.fast.handedBack.Load(); got != wantHanded {
					t.Fatalf("%s: %d calls handed back, want %d", tool, got, wantHanded)
				}
				n := 0
				if tool == "steps" {
					n = 3
				}
				if diff := cmp.Diff(th.takeProgress(n), fh.takeProgress(n)); diff != "" {
					t.Fatalf("%s: progress (-typed +fast):\n%s", tool, diff)
				}
			}
			if typed.srv.fast.served.Load() != 0 {
				t.Fatal("TypedRelay served calls on the fast path")
			}
		})
	}
}

// TestFastPathStepsComeBeforeTheResult: a host hears every step of the
// server's progress, in order (the proxy sends them before the result).
func TestFastPathStepsComeBeforeTheResult(t *testing.T) {
	r := fastRig(t, Options{})
	h := newFastHost(r, legacyVersion)
	r.waitApplied()
	params := &mcp.CallToolParams{Name: "files__steps", Arguments: map[string]any{}}
	params.SetProgressToken(7)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if _, err := h.cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	want := []string{"7 1/3 step 1", "7 2/3 step 2", "7 3/3 step 3"}
	if diff := cmp.Diff(want, h.takeProgress(len(want))); diff != "" {
		t.Fatalf("progress (-want +got):\n%s", diff)
	}
}

// TestFastPathCancelReachesTheServer: a host's cancel ends the server's
// handler, and the session serves on.
func TestFastPathCancelReachesTheServer(t *testing.T) {
	r, w := fastRigWaiting(t, Options{})
	h := newFastHost(r, legacyVersion)
	r.waitApplied()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__wait", Arguments: map[string]any{}})
		errc <- err
	}()
	await(t, w.arrived, "the call reached the server")
	served := r.srv.fast.served.Load()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	await(t, w.cancelled, "the server's handler was cancelled")
	if served == 0 {
		t.Fatal("the call did not take the fast path")
	}
	if got, isErr := call(t, h.cs, "files__echo", map[string]any{"text": "after"}); got != "after" || isErr {
		t.Fatalf("after the cancel: %q (error %v)", got, isErr)
	}
}

// TestFastPathLossIsWordedAsTyped: a call its server's crash cut short
// is answered as the typed path answers it (through the SDK's server).
func TestFastPathLossIsWordedAsTyped(t *testing.T) {
	r, w := fastRigWaiting(t, Options{})
	h := newFastHost(r, legacyVersion)
	r.waitApplied()
	type out struct {
		text  string
		isErr bool
	}
	c := make(chan out, 1)
	go func() {
		got, isErr := call(t, h.cs, "files__wait", map[string]any{})
		c <- out{got, isErr}
	}()
	await(t, w.arrived, "the call reached the server")
	handed := r.srv.fast.handedBack.Load()
	r.mems["files"].Gen(1).Kill()
	o := <-c
	if !o.isErr || !strings.Contains(o.text, "the connection to the server was lost during the call") {
		t.Fatalf("wait after the crash: %+v", o)
	}
	if r.srv.fast.handedBack.Load() != handed+1 {
		t.Fatal("the loss was not answered through the SDK's server")
	}
}

// TestFastPathLeavesOthersToTheSDK: requests the SDK would answer
// otherwise (an unknown tool, params the fast path does not know) go to
// it.
func TestFastPathLeavesOthersToTheSDK(t *testing.T) {
	r := fastRig(t, Options{})
	h := newFastHost(r, legacyVersion)
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	served := r.srv.fast.served.Load()
	if _, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: %v", err)
	}
	if r.srv.fast.served.Load() != served {
		t.Fatal("the fast path took a call of an unknown tool")
	}
}

// TestHostFirstListReleasesStarts: a stdio host's first tools/list
// releases the pool's held starts (PoolOptions.HoldStarts); nothing
// before it does.
func TestHostFirstListReleasesStarts(t *testing.T) {
	r := fastRig(t, Options{})
	h := newFastHost(r, legacyVersion)
	r.waitApplied()
	select {
	case <-r.srv.listed:
		t.Fatal("released before the host listed its tools")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if _, err := h.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.srv.listed:
	case <-ctx.Done():
		t.Fatal("the host's first tools/list did not release the held starts")
	}
}
