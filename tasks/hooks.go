package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
)

// Hooks are what a Runner may tell its task while the call runs.
type Hooks struct {
	e *Engine
	t *task
}

// Resending reports that the call was lost with its server and Call is
// sending it once more on the next generation (replay-safe, first loss,
// docs/design.md §21): the task stays working, saying so.
func (h Hooks) Resending() {
	h.e.fire(h.t, Lost, Facts{Resending: true}, nil)
}

// Ask holds a request of the server to the host (the bridge of §24) as
// an input request of the task under key, and returns the host's answer
// (tasks/update). It fails when ctx ends or the task ends first.
func (h Hooks) Ask(ctx context.Context, key string, request json.RawMessage) (json.RawMessage, error) {
	e, t := h.e, h.t
	ch := make(chan json.RawMessage, 1)
	e.mu.Lock()
	if t.rec.Status.Terminal() {
		e.mu.Unlock()
		return nil, fmt.Errorf("tasks: task %q is %s", t.rec.ID, t.rec.Status)
	}
	if _, dup := t.inputs[key]; dup {
		e.mu.Unlock()
		return nil, fmt.Errorf("tasks: task %q: input %q asked twice", t.rec.ID, key)
	}
	t.inputs[key] = ch
	if t.rec.InputRequests == nil {
		t.rec.InputRequests = map[string]json.RawMessage{}
	}
	t.rec.InputRequests[key] = request
	t.movedLocked()
	working := t.rec.Status == Working
	rec := t.rec
	rec.InputRequests = maps.Clone(t.rec.InputRequests)
	e.mu.Unlock()
	if working {
		e.fire(t, InputRequested, Facts{}, nil)
	} else {
		e.changed(rec)
	}
	select {
	case v := <-ch:
		return v, nil
	case <-t.done:
		return nil, fmt.Errorf("tasks: task %q ended while asking the host", t.rec.ID)
	case <-ctx.Done():
		e.mu.Lock()
		if t.inputs[key] == ch {
			delete(t.inputs, key)
			delete(t.rec.InputRequests, key)
			t.movedLocked()
		}
		e.mu.Unlock()
		return nil, ctx.Err()
	}
}
