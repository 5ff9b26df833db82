package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpkeep/mcpkeep/tasks"
)

// rig is an engine on a mock clock, inside a synctest bubble: after
// synctest.Wait every goroutine of the engine has done what it can.
type rig struct {
	t     *testing.T
	clk   *clock.Mock
	store *tasks.MemStore
	e     *tasks.Engine
}

func newRig(t *testing.T, tweak func(*tasks.Options)) *rig {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	r := &rig{t: t, clk: clk, store: tasks.NewMemStore()}
	o := tasks.Options{Clock: clk, Store: r.store, DefaultTTL: time.Minute}
	if tweak != nil {
		tweak(&o)
	}
	e, err := tasks.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func (r *rig) create(owner string, run tasks.Runner) tasks.Record {
	r.t.Helper()
	rec, err := r.e.Create(tasks.Spec{Owner: owner, Server: "s", Tool: "tool", Run: run})
	if err != nil {
		r.t.Fatal(err)
	}
	synctest.Wait()
	return rec
}

func (r *rig) get(owner, id string) tasks.Record {
	r.t.Helper()
	rec, err := r.e.Get(context.Background(), owner, id)
	if err != nil {
		r.t.Fatalf("Get(%s): %v", id, err)
	}
	return rec
}

func (r *rig) advance(d time.Duration) {
	r.clk.Add(d)
	synctest.Wait()
}

// gate is a runner that waits for its release (or its context) and
// counts its runs and cancellations.
type gate struct {
	release   chan json.RawMessage
	fail      chan error
	runs      atomic.Int32
	cancelled atomic.Int32
}

func newGate() *gate { return &gate{release: make(chan json.RawMessage, 1), fail: make(chan error, 1)} }

func (g *gate) run(ctx context.Context, _ tasks.Hooks) (json.RawMessage, error) {
	g.runs.Add(1)
	select {
	case res := <-g.release:
		return res, nil
	case err := <-g.fail:
		return nil, err
	case <-ctx.Done():
		g.cancelled.Add(1)
		return nil, ctx.Err()
	}
}

var okResult = json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)

func TestEngineCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		g := newGate()
		rec := r.create("h", g.run)
		if rec.Status != tasks.Working || rec.TTLMs != 60000 || rec.ID == "" {
			t.Fatalf("created %+v", rec)
		}
		if got := r.get("h", rec.ID); got.Status != tasks.Working {
			t.Fatalf("status %s, want working", got.Status)
		}
		g.release <- okResult
		synctest.Wait()
		got := r.get("h", rec.ID)
		if got.Status != tasks.Completed || string(got.Result) != string(okResult) {
			t.Fatalf("got %+v, want completed with the result", got)
		}
		if g.runs.Load() != 1 {
			t.Fatalf("%d runs", g.runs.Load())
		}
		if c := r.e.Counts(); c[tasks.Completed] != 1 || c[tasks.Working] != 0 {
			t.Fatalf("counts %v", c)
		}
		if r.store.Len() != 1 {
			t.Fatalf("store holds %d, want the finished task", r.store.Len())
		}
	})
}

// TestEngineRPCErrorFails: a JSON-RPC error fails the task with it; a
// tool result with isError completes it (failed is for JSON-RPC errors).
func TestEngineRPCErrorFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		g := newGate()
		rec := r.create("h", g.run)
		g.fail <- errors.New("boom")
		synctest.Wait()
		got := r.get("h", rec.ID)
		if got.Status != tasks.Failed || got.Error == nil || got.Error.Message != "boom" {
			t.Fatalf("got %+v", got)
		}
		g2 := newGate()
		rec2 := r.create("h", g2.run)
		g2.release <- json.RawMessage(`{"content":[],"isError":true}`)
		synctest.Wait()
		if got := r.get("h", rec2.ID); got.Status != tasks.Completed {
			t.Fatalf("isError result: %s, want completed", got.Status)
		}
	})
}

// TestEngineLostOutcomeUnknown: a loss Call returns (no replay) fails the
// task with the outcome-unknown reason, and nothing runs it again.
func TestEngineLostOutcomeUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		g := newGate()
		rec := r.create("h", g.run)
		g.fail <- fmt.Errorf("write: %w", tasks.ErrLost)
		synctest.Wait()
		got := r.get("h", rec.ID)
		if got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonOutcomeUnknown {
			t.Fatalf("got %s %q", got.Status, got.StatusMessage)
		}
		if got.Error == nil || !strings.Contains(string(got.Error.Data), "server_lost_outcome_unknown") {
			t.Fatalf("error %+v lacks the machine-readable reason", got.Error)
		}
		r.advance(time.Minute / 2)
		if g.runs.Load() != 1 {
			t.Fatalf("%d runs, want 1", g.runs.Load())
		}
	})
}

// TestEngineResendingStaysWorking: while Call re-sends a replay-safe call
// the task stays working and says why; the replay's answer completes it.
func TestEngineResendingStaysWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		release := make(chan struct{})
		rec := r.create("h", func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
			h.Resending()
			<-release
			return okResult, nil
		})
		got := r.get("h", rec.ID)
		if got.Status != tasks.Working || got.StatusMessage != tasks.MessageResending {
			t.Fatalf("got %s %q, want working, resending", got.Status, got.StatusMessage)
		}
		close(release)
		synctest.Wait()
		if got := r.get("h", rec.ID); got.Status != tasks.Completed || got.StatusMessage != "" {
			t.Fatalf("got %s %q, want completed", got.Status, got.StatusMessage)
		}
	})
}

// TestEngineCancelRacingCompletion: whichever comes first wins and the
// other changes nothing (T1): a cancel after the result acknowledges the
// completed task; a result after the cancel is dropped.
func TestEngineCancelRacingCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ctx := context.Background()

		g := newGate()
		rec := r.create("h", g.run)
		g.release <- okResult
		synctest.Wait()
		got, err := r.e.Cancel(ctx, "h", rec.ID)
		if err != nil || got.Status != tasks.Completed || string(got.Result) != string(okResult) {
			t.Fatalf("cancel after completion: %+v, %v", got, err)
		}

		var ran atomic.Bool
		late := make(chan struct{})
		rec2 := r.create("h", func(ctx context.Context, _ tasks.Hooks) (json.RawMessage, error) {
			<-ctx.Done() // the cancel reached the call (T4) ...
			<-late       // ... which answers anyway, late
			ran.Store(true)
			return okResult, nil
		})
		got, err = r.e.Cancel(ctx, "h", rec2.ID)
		if err != nil || got.Status != tasks.Cancelled {
			t.Fatalf("cancel: %+v, %v", got, err)
		}
		close(late)
		synctest.Wait()
		if !ran.Load() {
			t.Fatal("the call did not return")
		}
		if got := r.get("h", rec2.ID); got.Status != tasks.Cancelled || got.Result != nil {
			t.Fatalf("after the late answer: %s, result %s", got.Status, got.Result)
		}
		if got, err := r.e.Cancel(ctx, "h", rec2.ID); err != nil || got.Status != tasks.Cancelled {
			t.Fatalf("second cancel: %+v, %v", got, err)
		}
	})
}

// TestEngineTTLWhilePolling: a host polls up to the TTL; at the TTL the
// task is failed (the call cancelled) and then unknown, before the timer
// goroutine had a chance to run or after.
func TestEngineTTLWhilePolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []tasks.Record
		r := newRig(t, func(o *tasks.Options) {
			o.OnChange = func(rec tasks.Record) { changes = append(changes, rec) }
		})
		g := newGate()
		rec := r.create("h", g.run)
		for range 59 {
			r.advance(time.Second)
			if got := r.get("h", rec.ID); got.Status != tasks.Working {
				t.Fatalf("status %s before the TTL", got.Status)
			}
		}
		r.clk.Add(time.Second) // the TTL: the poll may beat the timer
		if _, err := r.e.Get(context.Background(), "h", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("poll at the TTL: %v, want ErrNotFound", err)
		}
		synctest.Wait()
		if g.cancelled.Load() != 1 {
			t.Fatal("the expired task's call was not cancelled")
		}
		last := changes[len(changes)-1]
		if last.Status != tasks.Failed || last.StatusMessage != tasks.ReasonExpired {
			t.Fatalf("last change %s %q, want failed, expired", last.Status, last.StatusMessage)
		}
		if r.store.Len() != 0 || r.e.Counts()[tasks.Failed] != 0 {
			t.Fatal("an expired task was kept")
		}

		// A finished task is kept to its TTL, then forgotten.
		g2 := newGate()
		rec2 := r.create("h", g2.run)
		g2.release <- okResult
		synctest.Wait()
		r.advance(59 * time.Second)
		if got := r.get("h", rec2.ID); got.Status != tasks.Completed {
			t.Fatal(got.Status)
		}
		r.advance(time.Second)
		if _, err := r.e.Get(context.Background(), "h", rec2.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("after the TTL: %v", err)
		}
		if r.store.Len() != 0 {
			t.Fatal("the store still holds it")
		}
	})
}

// TestEngineCloseWithTasksWorking: Close fails working tasks with the
// disposed reason, cancels their calls, keeps their records and joins.
func TestEngineCloseWithTasksWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		g := newGate()
		rec := r.create("h", g.run)
		if err := r.e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if g.cancelled.Load() != 1 {
			t.Fatal("the call was not cancelled")
		}
		got, err := r.store.Get(context.Background(), rec.ID)
		if err != nil || got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonDisposed {
			t.Fatalf("kept %+v, %v", got, err)
		}
		if _, err := r.e.Create(tasks.Spec{Run: g.run}); !errors.Is(err, tasks.ErrClosed) {
			t.Fatalf("Create after Close: %v", err)
		}
	})
}

// TestEngineBounds: over a bound the host gets a *LimitError at once and
// nothing runs; a result over MaxResultBytes fails the task saying the
// work took effect.
func TestEngineBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(o *tasks.Options) {
			o.MaxPerOwner, o.MaxTotal, o.MaxResultBytes, o.MaxKeptBytes = 2, 3, 64, 100
		})
		var runs atomic.Int32
		block := func(ctx context.Context, _ tasks.Hooks) (json.RawMessage, error) {
			runs.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		r.create("a", block)
		r.create("a", block)
		var le *tasks.LimitError
		if _, err := r.e.Create(tasks.Spec{Owner: "a", Run: block}); !errors.As(err, &le) || le.Bound != "MaxPerOwner" || !errors.Is(err, tasks.ErrTooMany) {
			t.Fatalf("third of a: %v", err)
		}
		b := r.create("b", func(context.Context, tasks.Hooks) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}`), nil
		})
		if got := r.get("b", b.ID); got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonTooLarge {
			t.Fatalf("oversized: %s %q", got.Status, got.StatusMessage)
		}
		if _, err := r.e.Create(tasks.Spec{Owner: "c", Run: block}); !errors.As(err, &le) || le.Bound != "MaxTotal" {
			t.Fatalf("fourth in all: %v", err)
		}
		synctest.Wait()
		if runs.Load() != 2 {
			t.Fatalf("%d runs, want 2 (refused tasks never run)", runs.Load())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(o *tasks.Options) { o.MaxKeptBytes = 10 })
		g := newGate()
		r.create("a", g.run)
		g.release <- okResult
		synctest.Wait()
		var le *tasks.LimitError
		if _, err := r.e.Create(tasks.Spec{Owner: "a", Run: g.run}); !errors.As(err, &le) || le.Bound != "MaxKeptBytes" {
			t.Fatalf("over the kept bytes: %v", err)
		}
	})
}

// TestEngineOwners: another host does not find, cancel or answer a task.
func TestEngineOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		g := newGate()
		rec := r.create("a", g.run)
		ctx := context.Background()
		if _, err := r.e.Get(ctx, "b", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("Get by b: %v", err)
		}
		if _, err := r.e.Cancel(ctx, "b", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("Cancel by b: %v", err)
		}
		if _, err := r.e.Update("b", rec.ID, nil); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("Update by b: %v", err)
		}
		if got := r.get("a", rec.ID); got.Status != tasks.Working {
			t.Fatalf("a's task is %s", got.Status)
		}
		if _, err := r.e.Get(ctx, "a", "nope"); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
	})
}

// TestEngineInput: a server's request inside the task (§24's bridge) is
// an input request; the host's answer resumes the call.
func TestEngineInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		rec := r.create("h", func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
			ans, err := h.Ask(ctx, "e1", json.RawMessage(`{"method":"elicitation/create"}`))
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`{"content":[{"type":"text","text":` + string(ans) + `}]}`), nil
		})
		got := r.get("h", rec.ID)
		if got.Status != tasks.InputRequired || string(got.InputRequests["e1"]) != `{"method":"elicitation/create"}` {
			t.Fatalf("got %+v", got)
		}
		if got, err := r.e.Update("h", rec.ID, map[string]json.RawMessage{"e2": []byte(`1`)}); err != nil || got.Status != tasks.InputRequired {
			t.Fatalf("an answer to nothing open: %+v, %v; want it dropped", got, err)
		}
		if _, err := r.e.Update("h", rec.ID, map[string]json.RawMessage{"e1": []byte(`"Alice"`)}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got = r.get("h", rec.ID)
		if got.Status != tasks.Completed || !strings.Contains(string(got.Result), "Alice") || got.InputRequests != nil {
			t.Fatalf("got %+v", got)
		}
	})
}

// TestEngineSoakForgetsAfterTTL: many tasks over time; after their TTL
// nothing of them is left (engine, store, kept bytes): no leak.
func TestEngineSoakForgetsAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(o *tasks.Options) { o.MaxTotal, o.MaxPerOwner = 5000, 5000 })
		const rounds, per = 100, 30
		for i := range rounds {
			for j := range per {
				r.create(fmt.Sprintf("h%d", j%3), func(context.Context, tasks.Hooks) (json.RawMessage, error) {
					return okResult, nil
				})
			}
			r.advance(time.Second)
			// Never more than a TTL's worth is kept.
			if n := r.store.Len(); n > 61*per {
				t.Fatalf("round %d: %d kept", i, n)
			}
		}
		r.advance(time.Minute)
		r.e.Counts() // a sweep
		total := 0
		for _, n := range r.e.Counts() {
			total += n
		}
		if total != 0 || r.store.Len() != 0 || r.e.KeptBytes() != 0 {
			t.Fatalf("after the TTL: %d tasks, %d stored, %d bytes", total, r.store.Len(), r.e.KeptBytes())
		}
	})
}

func TestEngineOptionsErrors(t *testing.T) {
	if _, err := tasks.New(tasks.Options{MaxTotal: -1}); !errors.Is(err, tasks.ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxTotal") {
		t.Fatalf("negative MaxTotal: %v", err)
	}
	if _, err := tasks.New(tasks.Options{DefaultTTL: time.Hour, MaxTTL: time.Minute}); !errors.Is(err, tasks.ErrInvalidOptions) || !strings.Contains(err.Error(), "DefaultTTL") {
		t.Fatalf("DefaultTTL over MaxTTL: %v", err)
	}
}
