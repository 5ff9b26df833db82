package tasks_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/tasks"
)

// closed reports whether ch is closed (without waiting).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestEngineWatch: Watch's channel is closed at each change of the task
// (an input request, its answer, the end), and a task not live is not
// watched (the front's grace period, docs/design.md §25).
func TestEngineWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		proceed := make(chan struct{})
		rec, err := r.e.Create(tasks.Spec{Owner: "h", Server: "s", Tool: "tool", Run: func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
			<-proceed
			if _, err := h.Ask(ctx, "e1", json.RawMessage(`{"method":"elicitation/create"}`)); err != nil {
				return nil, err
			}
			<-proceed
			return json.RawMessage(`{"content":[]}`), nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got, moved, ok := r.e.Watch(rec.ID)
		if !ok || got.Status != tasks.Working || closed(moved) {
			t.Fatalf("working: %+v, moved %v, ok %v", got, closed(moved), ok)
		}
		proceed <- struct{}{}
		synctest.Wait()
		if !closed(moved) {
			t.Fatal("an input request did not wake the watcher")
		}
		got, moved, _ = r.e.Watch(rec.ID)
		if got.Status != tasks.InputRequired || len(got.InputRequests) != 1 {
			t.Fatalf("asking: %+v", got)
		}
		if _, err := r.e.Update("h", rec.ID, map[string]json.RawMessage{"e1": json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if !closed(moved) {
			t.Fatal("the answer did not wake the watcher")
		}
		synctest.Wait()
		_, moved, _ = r.e.Watch(rec.ID)
		proceed <- struct{}{}
		synctest.Wait()
		if !closed(moved) {
			t.Fatal("the end did not wake the watcher")
		}
		if _, _, ok := r.e.Watch(rec.ID); ok {
			t.Fatal("a finished task is still watched")
		}
	})
}
