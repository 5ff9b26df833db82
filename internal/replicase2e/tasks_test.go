//go:build replicas

package replicase2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tasks through the balancer (docs/design.md §25, §26): a 2026-07-28 host
// that opts into the tasks extension calls record (no hints: never run
// twice) and gets a task, then polls it through round robin; the polls
// that land on another replica are forwarded to the task's owner. A task
// ends completed with its own answer, or, when its replica is killed
// while it runs, failed saying the outcome is unknown. Anything else is
// counted: an error, a wrong answer, a task that never ended.
type taskCounts struct {
	errs                                   sync.Map // message → *atomic.Int64
	completed, lostUnknown, wrong, unended atomic.Int64
	// failed: an error or another end, before the kill; failedAfter:
	// after it (a request haproxy sent to the killed replica: 502).
	failed, failedAfter atomic.Int64
}

func (c *taskCounts) String() string {
	var errs strings.Builder
	c.errs.Range(func(k, v any) bool {
		fmt.Fprintf(&errs, "\n      %dx %s", v.(*atomic.Int64).Load(), k)
		return true
	})
	return errs.String() + "\n    " + fmt.Sprintf("tasks completed %d, failed with the outcome unknown %d, failed otherwise %d before the kill and %d after, answered wrongly %d, never ended %d",
		c.completed.Load(), c.lostUnknown.Load(), c.failed.Load(), c.failedAfter.Load(), c.wrong.Load(), c.unended.Load())
}

// taskFailed counts a task that failed otherwise, by phase.
func (r *run) taskFailed(why string) {
	if len(why) > 200 {
		why = why[:200]
	}
	n, _ := r.tasks.errs.LoadOrStore(why, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	if r.killed.Load() {
		r.tasks.failedAfter.Add(1)
		return
	}
	r.tasks.failed.Add(1)
}

// post sends one 2026-07-28 request through the balancer and returns
// its result (or its JSON-RPC error's message as err).
func (r *run) post(ctx context.Context, method, name string, params map[string]any) (map[string]any, error) {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernEra,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "task-host", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.front, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modernEra)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = raw[i+len("data: "):]
		if j := bytes.IndexByte(raw, '\n'); j >= 0 {
			raw = raw[:j]
		}
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, fmt.Errorf("HTTP %d: %v: %.200s", resp.StatusCode, err, raw)
	}
	if msg.Error != nil {
		return nil, rpcError(msg.Error.Message)
	}
	return msg.Result, nil
}

// rpcError is a JSON-RPC error answer (the other errors of post are the
// transport's: a poll in flight through a replica as it was killed).
type rpcError string

func (e rpcError) Error() string { return string(e) }

// taskServers are the ledger servers of the task hosts, one each, after
// the other hosts' (a server's request while calls of two host sessions
// are in flight is refused as ambiguous over stdio, docs/design.md §13:
// a task host sharing an ask host's server would make that refusal).
const taskServers = 2

// taskHost starts long record calls as tasks and polls each to its end,
// until ctx ends.
func (r *run) taskHost(ctx context.Context, w int) {
	tool := fmt.Sprintf("led%d__record", servers+w)
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("task%d.%d", w, n)
		res, err := r.post(ctx, "tools/call", tool, map[string]any{"name": tool, "arguments": map[string]any{"id": id, "ms": 800}})
		if ctx.Err() != nil {
			return
		}
		if err != nil || res["resultType"] != "task" {
			r.taskFailed(fmt.Sprintf("tools/call: %v %v", err, res["resultType"]))
			continue
		}
		taskID, _ := res["taskId"].(string)
		r.pollTask(taskID, id)
	}
}

// pollTask polls a task through the balancer until it ends (within 20 s,
// past the run's own end: a task started is followed to its end).
func (r *run) pollTask(taskID, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		res, err := r.post(ctx, "tasks/get", taskID, map[string]any{"taskId": taskID})
		var rpc rpcError
		if err != nil && !errors.As(err, &rpc) && ctx.Err() == nil {
			// The poll, not the task, was lost (haproxy sent it to the
			// replica being killed): a host polls again.
			res = nil
		} else if err != nil {
			r.taskFailed("tasks/get: " + err.Error())
			return
		}
		switch res["status"] {
		case "completed":
			b, _ := json.Marshal(res["result"])
			if strings.Contains(string(b), `"rec:`+id+`"`) {
				r.tasks.completed.Add(1)
			} else {
				r.tasks.wrong.Add(1)
			}
			return
		case "failed":
			if msg, _ := res["statusMessage"].(string); strings.Contains(msg, "outcome is unknown") {
				r.tasks.lostUnknown.Add(1)
			} else {
				r.taskFailed("failed: " + msg)
			}
			return
		case "cancelled":
			r.taskFailed("cancelled")
			return
		}
		select { // a host's poll interval, not a wait for a condition
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	r.tasks.unended.Add(1)
}
