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
	ins, err := h.Open(map[string]json.RawMessage{key: request})
	if err != nil {
		return nil, err
	}
	return ins[key].Wait(ctx)
}

// An Input is one input request of a task held open by Open: the host
// answers it with tasks/update, Wait takes the answer.
type Input struct {
	e   *Engine
	t   *task
	key string
	ch  chan json.RawMessage
}

// Open holds several requests of the server at once, as one change of
// the task: a 2026-07-28 server's round of input requests is shown to the
// host whole (docs/design.md §25), never one key after another. No key
// may be open already.
func (h Hooks) Open(requests map[string]json.RawMessage) (map[string]*Input, error) {
	e, t := h.e, h.t
	out := make(map[string]*Input, len(requests))
	e.mu.Lock()
	if t.rec.Status.Terminal() {
		e.mu.Unlock()
		return nil, fmt.Errorf("tasks: task %q is %s", t.rec.ID, t.rec.Status)
	}
	for key := range requests {
		if _, dup := t.inputs[key]; dup {
			e.mu.Unlock()
			return nil, fmt.Errorf("tasks: task %q: input %q asked twice", t.rec.ID, key)
		}
	}
	if t.rec.InputRequests == nil {
		t.rec.InputRequests = map[string]json.RawMessage{}
	}
	for key, request := range requests {
		in := &Input{e: e, t: t, key: key, ch: make(chan json.RawMessage, 1)}
		t.inputs[key] = in.ch
		t.rec.InputRequests[key] = request
		out[key] = in
	}
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
	return out, nil
}

// Wait returns the host's answer to the input, or fails when ctx ends
// (the input is withdrawn) or the task ends first.
func (in *Input) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case v := <-in.ch:
		return v, nil
	case <-in.t.done:
		return nil, fmt.Errorf("tasks: task %q ended while asking the host", in.t.rec.ID)
	case <-ctx.Done():
		in.Withdraw()
		return nil, ctx.Err()
	}
}

// Withdraw closes the input if it is still open: the host is no longer
// asked for it, and an answer to it is dropped.
func (in *Input) Withdraw() {
	e, t := in.e, in.t
	e.mu.Lock()
	if t.inputs[in.key] == in.ch {
		delete(t.inputs, in.key)
		delete(t.rec.InputRequests, in.key)
		t.movedLocked()
	}
	e.mu.Unlock()
}

// Key is the input's key in the task's inputRequests.
func (in *Input) Key() string { return in.key }
