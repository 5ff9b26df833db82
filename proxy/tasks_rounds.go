package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Rounds before a task (docs/design.md §25, with §24's multi round trip):
// a 2026-07-28 host's call under mode "auto" whose task asks for input
// within the grace period is answered as a call that needs input (an
// InputRequiredResult: the task's open input requests, and a sealed
// requestState pointing at the task), not with a task the host never
// asked to wait for. The host's next round (the same call with its
// inputResponses and that state) gives the answers to the task and waits
// the grace again: ended, the call is answered inline (the task is
// forgotten); asking again, another InputRequiredResult; still working,
// the task (CreateTaskResult). The task runs, and keeps its TTL,
// throughout: a host that never comes back leaves a task that fails at
// its TTL, its call cancelled (T4).

// taskCall is what the front knows of the host's call behind a task.
type taskCall struct {
	server, tool string
	// modern: a 2026-07-28 host's call, which may be answered with an
	// InputRequiredResult; any other host gets the task, whose input
	// requests it reads with tasks/get.
	modern bool
}

// settled is how a task's grace period ended.
type settled int

const (
	stillWorking settled = iota
	taskEnded
	taskAsking
)

// await waits up to grace for the task of id to end or, when ask is set,
// to ask for input.
func (f *taskFront) await(ctx context.Context, id string, grace time.Duration, ask bool) (tasks.Record, settled) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		rec, moved, ok := f.e.Watch(id)
		switch {
		case !ok:
			return rec, taskEnded
		case ask && rec.Status == tasks.InputRequired && len(rec.InputRequests) > 0:
			return rec, taskAsking
		}
		select {
		case <-moved:
		case <-t.C:
			return rec, stillWorking
		case <-ctx.Done():
			return rec, stillWorking
		}
	}
}

// answer is the host's answer to a call whose task is id, after up to
// grace: inline, input required, or the task.
func (f *taskFront) answer(ctx context.Context, id string, c taskCall, grace time.Duration) (mcp.Result, error) {
	rec, how := f.await(ctx, id, grace, c.modern)
	switch how {
	case taskEnded:
		if res, err, ok := f.finished(id, c.modern); ok {
			return res, err
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("mcpkeep: the task %q of this call is gone (cancelled, or expired after its TTL)", id)}
	case taskAsking:
		return f.inputRequired(rec, c)
	}
	return createResult(rec), nil
}

// inputRequired answers the call with the task's open input requests
// (under the task's keys, as tasks/get shows them) and a requestState
// sealed like a bridge's (state.go: owner, expiry, server and tool),
// pointing at the task; it is good for the task's TTL.
func (f *taskFront) inputRequired(rec tasks.Record, c taskCall) (mcp.Result, error) {
	sealer := f.s.host.bridges.sealer()
	state := sealer.seal(sealedState{Task: rec.ID, Server: c.server, Tool: c.tool,
		Expiry: sealer.expiryAfter(time.Duration(rec.TTLMs) * time.Millisecond)})
	raw, err := json.Marshal(map[string]any{"resultType": "input_required", "inputRequests": rec.InputRequests, "requestState": state})
	if err != nil {
		return nil, err
	}
	// The SDK's own decode: the result is typed as a bridge's round is
	// (tools.go), and its resultType is kept.
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcpkeep: the task's input requests: %w", err)
	}
	return &res, nil
}

// resume is the host's next round of a call answered inputRequired: its
// answers go to the task (as tasks/update's would), then the grace again.
func (f *taskFront) resume(ctx context.Context, r *mcp.CallToolRequest, st sealedState) (mcp.Result, error) {
	if st.Tool != r.Params.Name {
		return nil, badState(fmt.Sprintf("it continues a call of %q, not of %q", st.Tool, r.Params.Name))
	}
	if !optedIn(r.ClientCapabilities()) {
		return nil, extensionRequired() // the round may end with the task
	}
	answers := make(map[string]json.RawMessage, len(r.Params.InputResponses))
	for k, v := range r.Params.InputResponses {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpkeep: inputResponses[%q]: %v", k, err)}
		}
		answers[k] = b
	}
	// A task no longer live may have ended while the host was away:
	// answer then finds its result, or says it is gone.
	if _, err := f.e.Update("", st.Task, answers); err != nil && !errors.Is(err, tasks.ErrNotFound) {
		return nil, unknownTask(st.Task, err)
	}
	c := taskCall{server: st.Server, tool: st.Tool, modern: modernToolCall(r)}
	return f.answer(ctx, st.Task, c, f.s.taskPolicy(st.Server).Grace)
}
