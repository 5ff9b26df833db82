package proxy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var eras = []string{"2026-07-28", "2025-11-25"}

// TestRouting: tools, prompts, resources, templates and completions of two
// servers reach the right server through one front, on both eras.
func TestRouting(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := newRig(t, Options{}, "a", "b")
			cs := r.host(era, nil)
			r.waitApplied()
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			for _, want := range []string{"a__echo", "b__echo", "a__sample", "b__sleep"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools %v lack %s", names, want)
				}
			}
			if got, isErr := call(t, cs, "b__echo", map[string]any{"text": "hi"}); got != "hi" || isErr {
				t.Errorf("b__echo: %q %v", got, isErr)
			}
			pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet"})
			if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello from b" {
				t.Errorf("b__greet: %v %+v", err, pr)
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://a/doc"})
			if err != nil || rr.Contents[0].Text != "doc of a" {
				t.Errorf("read mem://a/doc: %v %+v", err, rr)
			}
			rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://b/items/7"})
			if err != nil || rr.Contents[0].Text != "b item mem://b/items/7" {
				t.Errorf("read mem://b/items/7: %v %+v", err, rr)
			}
			cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
				Argument: mcp.CompleteParamsArgument{Name: "x", Value: "v"}})
			if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "a:v" {
				t.Errorf("complete a__greet: %v %+v", err, cr)
			}
		})
	}
}

// TestLongCallOnModernHost (docs/design.md §19): a 2026-07-28 host's call
// runs as long as the server takes; no timer of the bridge cuts it. Three
// hours on synctest's clock.
func TestLongCallOnModernHost(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Options{}, "a")
				cs := r.host(era, nil)
				r.waitApplied()
				ms := (3 * time.Hour).Milliseconds()
				if got, isErr := callWithin(t, cs, "a__sleep", map[string]any{"ms": ms}, 4*time.Hour); isErr || got != "slept 10800000ms" {
					t.Errorf("3 h call: %q (tool error %v)", got, isErr)
				}
			})
		})
	}
}

// TestShutdownCancelsCallsInFlight (docs/design.md §19): Shutdown gives a
// call in flight the drain grace, then cancels it, closes the host and
// disposes the servers, well within 10 s.
func TestShutdownCancelsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{}, "a")
		cs := r.host("2025-11-25", nil)
		r.waitApplied()
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__hang", Arguments: map[string]any{"text": "x"}})
			done <- err
		}()
		synctest.Wait()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if took := time.Since(start); took > 10*time.Second || took < DefaultDrainGrace {
			t.Errorf("Shutdown took %v, want the grace (%v) and well under 10 s", took, DefaultDrainGrace)
		}
		<-done
		if pool, _ := r.srv.Pool(); pool != nil {
			for _, s := range pool.States() {
				if s.State.String() != "disposed" {
					t.Errorf("%s is %s after Shutdown", s.Server, s.State)
				}
			}
		}
	})
}

// TestParallelCallsOfOneHostSample (docs/design.md §19): a server's
// sampling during one of several calls of the same host goes to that
// host; it is not "ambiguous".
func TestParallelCallsOfOneHostSample(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := newRig(t, Options{}, "a")
			cs := r.host(era, &mcp.ClientOptions{
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "the host"}}, nil
				},
			})
			r.waitApplied()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			wg.Go(func() {
				_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__hang", Arguments: map[string]any{"text": "x"}})
			})
			waitFor(t, "the hang call in flight", func() bool { return r.srv.calls.count() == 1 })
			if got, isErr := call(t, cs, "a__sample", nil); isErr || got != "sampled: the host" {
				t.Errorf("sample beside another call: %q (tool error %v)", got, isErr)
			}
			cancel()
			wg.Wait()
		})
	}
}

// waitFor polls cond (a state of the proxy with no event to wait on),
// bounded by testDeadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var _ = strings.Contains
