package tasks_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/tasks"
)

// TestEngineOpenRound: a round of input requests opens whole, in one
// change of the task (a watcher never sees half of it); one answer
// leaves the other open and the task input_required; a withdrawn input
// is no longer asked, and an answer to it is dropped; a key already open
// is refused (docs/design.md §25).
func TestEngineOpenRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		hooks := make(chan tasks.Hooks, 1)
		rec, err := r.e.Create(tasks.Spec{Owner: "h", Server: "s", Tool: "tool", Run: func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
			hooks <- h
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h := <-hooks
		_, moved, _ := r.e.Watch(rec.ID)
		ins, err := h.Open(map[string]json.RawMessage{"a": json.RawMessage(`{"method":"elicitation/create"}`), "b": json.RawMessage(`{"method":"roots/list"}`)})
		if err != nil {
			t.Fatal(err)
		}
		got, moved2, _ := r.e.Watch(rec.ID)
		if !closed(moved) || closed(moved2) || got.Status != tasks.InputRequired || len(got.InputRequests) != 2 {
			t.Fatalf("after Open: %+v (one change: %v, %v)", got, closed(moved), !closed(moved2))
		}
		if _, err := h.Open(map[string]json.RawMessage{"a": json.RawMessage(`{}`)}); err == nil {
			t.Fatal("a key already open was opened again")
		}
		if _, err := r.e.Update("h", rec.ID, map[string]json.RawMessage{"a": json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		if ans, err := ins["a"].Wait(context.Background()); err != nil || string(ans) != "1" {
			t.Fatalf("a's answer: %s, %v", ans, err)
		}
		if got := r.get("h", rec.ID); got.Status != tasks.InputRequired || len(got.InputRequests) != 1 || got.InputRequests["b"] == nil {
			t.Fatalf("after a's answer: %+v, want b open", got)
		}
		ins["b"].Withdraw()
		if got := r.get("h", rec.ID); len(got.InputRequests) != 0 {
			t.Fatalf("after b's withdrawal: %+v", got)
		}
		if got, err := r.e.Update("h", rec.ID, map[string]json.RawMessage{"b": json.RawMessage(`2`)}); err != nil || len(got.InputRequests) != 0 {
			t.Fatalf("an answer to a withdrawn input: %+v, %v", got, err)
		}
		if _, err := r.e.Cancel(context.Background(), "h", rec.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := ins["b"].Wait(context.Background()); err == nil {
			t.Fatal("waiting on an input of an ended task returned no error")
		}
	})
}
