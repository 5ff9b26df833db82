package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relaying the tasks of a server that has the extension itself
// (docs/design.md §25). Such a server's tasks are the truth: mcpkeep
// keeps none for it. An opted-in tools/call is sent with the host's
// capabilities and the extension (mcpkeep.TaskRelay); a task in the
// answer gets an id of mcpkeep's own (a handle: random, owner-named with
// replicas), which maps to the server, the generation that made the task
// and the server's id. tasks/get, tasks/update and tasks/cancel of a
// handle go to that generation with the server's id and come back with
// the handle. A generation that ended took its tasks with it: tasks/get
// then says failed, outcome unknown (never "unknown id", never a second
// run), tasks/cancel acks. Only servers over stdio (and in memory) are
// relayed: over Streamable HTTP the SDK's client decodes a task's fields
// away, and its connection cannot be wrapped to read them (left out).

// relayedEntry is one handle: where its task lives.
type relayedEntry struct {
	server   string
	gen      uint64
	upstream string // the server's task id
	created  time.Time
	ttl      time.Duration
	timer    *clock.Timer
	// release ends the hold on the server's idle stop (Supervisor.HoldUse):
	// at a terminal status seen, a cancel, the generation's end, the TTL.
	release func()
	// state is the status last seen from the server (its CreateTaskResult,
	// then each tasks/get relayed), for the counts (docs/design.md §25);
	// guarded by the table's mu.
	state tasks.State
}

// relayTable holds the handles, bounded (tasks.Options.MaxTotal) and each
// forgotten at its TTL (the server's ttlMs, at most MaxTTL).
type relayTable struct {
	clock          clock.Clock
	max            int
	defTTL, maxTTL time.Duration
	newID          func() string

	mu       sync.Mutex // guards the fields below; a leaf (docs/design.md §19, lock order)
	m        map[string]*relayedEntry
	reserved int // calls in flight that may come back with a task
}

func newRelayTable(o tasks.Options, rp *Replicas) *relayTable {
	t := &relayTable{clock: o.Clock, max: o.MaxTotal, defTTL: o.DefaultTTL, maxTTL: o.MaxTTL, m: map[string]*relayedEntry{}}
	if t.clock == nil {
		t.clock = clock.New()
	}
	if t.max <= 0 {
		t.max = tasks.DefaultMaxTotal
	}
	if t.defTTL <= 0 {
		t.defTTL = tasks.DefaultTTL
	}
	if t.maxTTL <= 0 {
		t.maxTTL = tasks.DefaultMaxTTL
	}
	t.newID = func() string { return "r-" + rand.Text() }
	if rp != nil {
		// Owner-named (docs/design.md §26): another replica forwards the
		// handle's tasks/* here, where the server's connection is.
		t.newID = func() string { return rp.Names.Name(replica.KindTask, "r-"+rand.Text()) }
	}
	return t
}

// reserve takes a place for a call that may come back with a task: the
// bound is checked before the server is asked, never after it made one.
func (t *relayTable) reserve() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m)+t.reserved >= t.max {
		return false
	}
	t.reserved++
	return true
}

func (t *relayTable) release() {
	t.mu.Lock()
	t.reserved--
	t.mu.Unlock()
}

// add turns a reservation into a handle for the server's task; release
// is its hold on the server (nil: none); status is the task's in the
// server's answer (working when it names none known).
func (t *relayTable) add(server string, gen uint64, upstream, status string, ttl time.Duration, release func()) (string, *relayedEntry) {
	if ttl <= 0 {
		ttl = t.defTTL
	}
	ttl = min(ttl, t.maxTTL)
	if release == nil {
		release = func() {}
	}
	id := t.newID()
	st, ok := tasks.ParseState(status)
	if !ok {
		st = tasks.Working
	}
	e := &relayedEntry{server: server, gen: gen, upstream: upstream, created: t.clock.Now(), ttl: ttl, release: release, state: st}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.m[id] = e
	e.timer = t.clock.AfterFunc(ttl, func() { t.forget(id, e) })
	return id, e
}

func (t *relayTable) forget(id string, e *relayedEntry) {
	e.release()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[id] == e {
		delete(t.m, id)
	}
}

// seen records the status a tasks/get of e's task answered; a status
// that names no state leaves the last one.
func (t *relayTable) seen(e *relayedEntry, status string) {
	st, ok := tasks.ParseState(status)
	if !ok {
		return
	}
	t.mu.Lock()
	e.state = st
	t.mu.Unlock()
}

// counts is the handles by the state last seen; a handle whose
// generation is no longer live (live says) is failed, as tasks/get of
// it answers. live is called with no lock held (it reads a supervisor).
func (t *relayTable) counts(live func(server string, gen uint64) bool) map[tasks.State]int {
	type held struct {
		server string
		gen    uint64
		state  tasks.State
	}
	t.mu.Lock()
	hs := make([]held, 0, len(t.m))
	for _, e := range t.m {
		hs = append(hs, held{e.server, e.gen, e.state})
	}
	t.mu.Unlock()
	out := map[tasks.State]int{}
	for _, h := range hs {
		st := h.state
		if !live(h.server, h.gen) {
			st = tasks.Failed
		}
		out[st]++
	}
	return out
}

func (t *relayTable) lookup(id string) (*relayedEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	return e, ok
}

// size is the handles held and the places reserved.
func (t *relayTable) size() (held, reserved int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m), t.reserved
}

// close stops the TTL timers and ends the holds (Shutdown); the holds
// end with no lock held (a hold's end may message a supervisor's loop).
func (t *relayTable) close() {
	t.mu.Lock()
	held := make([]*relayedEntry, 0, len(t.m))
	for id, e := range t.m {
		e.timer.Stop()
		held = append(held, e)
		delete(t.m, id)
	}
	t.mu.Unlock()
	for _, e := range held {
		e.release()
	}
}

// relays reports whether server's tasks are relayed: it advertised the
// extension, it is reached over stdio (or in memory), and its policy for
// the tool is not "never" (then mcpkeep neither keeps nor relays a task:
// the server is not told the extension and answers as a call).
func (f *taskFront) relays(server, mode string) bool {
	if f.relay == nil || mode == config.TasksNever {
		return false
	}
	pool := f.s.getPool()
	if pool == nil {
		return false
	}
	if sc, ok := pool.Server(server); !ok || sc.Transport == config.TransportHTTP {
		return false
	}
	sup, ok := pool.Supervisor(server)
	if !ok {
		return false
	}
	info := sup.ServerInfo()
	if info == nil || info.Capabilities == nil {
		return false
	}
	_, ok = info.Capabilities.Extensions[tasksExtension]
	return ok
}

// relayCall sends an opted-in call to a server that has tasks itself:
// its task comes back under a handle, any other answer as a call.
func (f *taskFront) relayCall(ctx context.Context, r *mcp.CallToolRequest, server string) (mcp.Result, error) {
	if !f.relay.reserve() {
		return nil, taskRefused(&tasks.LimitError{Bound: "MaxTotal", Limit: int64(f.relay.max)})
	}
	reserved := true
	defer func() {
		if reserved {
			f.relay.release()
		}
	}()
	pool := f.s.getPool()
	if pool == nil {
		return nil, errors.New("mcpkeep: no servers yet")
	}
	tr := &mcpkeep.TaskRelay{Extension: tasksExtension}
	cctx := mcpkeep.WithHostCapabilities(ctx, r.ClientCapabilities())
	if !isModern(r.Session) {
		// A server request during a call answered as a call goes to this host.
		cctx = withCarrier(cctx, via{session: r.Session})
	}
	cctx, done := f.s.track(cctx)
	defer done()
	start := time.Now()
	raw, err := pool.CallRaw(cctx, r.Params.Name, r.Params.Arguments,
		&mcpkeep.CallOptions{LogLevel: requestLevel(r), TaskRelay: tr})
	f.s.observeRequest(server, "tools/call", start, err)
	if err != nil {
		// As a call's: a server's JSON-RPC error as it is, a failure of
		// the connection as an isError result naming it.
		res, err := f.s.up.result(nil, err)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	var head struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
		TTLMs      int64  `json:"ttlMs"`
	}
	if json.Unmarshal(raw, &head) == nil && head.ResultType == "task" {
		if tr.Generation == 0 {
			// The call went the typed way, without the extension: a task
			// not asked for (tasks_relay_unasked.go); no handle, no hold.
			return f.s.up.result(nil, &UnaskedTaskError{Server: server, Tool: r.Params.Name, TaskID: head.TaskID})
		}
		if head.TaskID == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("mcpkeep: server %q answered with a task mcpkeep cannot relay (no task id)", server)}
		}
		var release func()
		if sup, ok := pool.Supervisor(server); ok {
			// The task is the server's work: no idle stop while it runs.
			release = sup.HoldUse(tr.Generation)
		}
		id, _ := f.relay.add(server, tr.Generation, head.TaskID, head.Status, time.Duration(head.TTLMs)*time.Millisecond, release)
		reserved = false
		out, err := withTaskID(raw, id)
		if err != nil {
			return nil, err
		}
		return &relayedResult{raw: out}, nil
	}
	res, err := inlineResult(raw, modernToolCall(r)) // tasks_inline.go
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: the tool's result: %w", err)
	}
	return res, nil
}

// relayedResult is a server's answer passed to the host as it is; _meta
// keys the front set (the SDK's serverInfo for a 2026-07-28 host) are
// added where the server's answer has none of that name.
type relayedResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *relayedResult) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return r.raw, nil
	}
	var err error
	out, eerr := editMeta(r.raw, func(meta map[string]json.RawMessage) {
		for k, v := range r.Meta {
			if _, ok := meta[k]; !ok && err == nil {
				meta[k], err = json.Marshal(v)
			}
		}
	})
	return out, errors.Join(eerr, err)
}

// withTaskID is the result raw with its taskId replaced by id.
func withTaskID(raw json.RawMessage, id string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("mcpkeep: the server's task: %w", err)
	}
	b, _ := json.Marshal(id)
	m["taskId"] = b
	return json.Marshal(m)
}

// relayed answers a tasks/* request for a handle; ok is false for an id
// that is not one (the engine's, or unknown).
func (f *taskFront) relayed(ctx context.Context, method, id string, responses map[string]json.RawMessage) (mcp.Result, bool, error) {
	if f.relay == nil {
		return nil, false, nil
	}
	e, ok := f.relay.lookup(id)
	if !ok {
		return nil, false, nil
	}
	params := map[string]any{"taskId": e.upstream}
	if method == "tasks/update" {
		params["inputResponses"] = responses
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, true, err
	}
	pool := f.s.getPool()
	if pool == nil {
		return nil, true, errors.New("mcpkeep: no servers yet")
	}
	raw, err := pool.TaskRequest(ctx, e.server, e.gen, method, p, tasksExtension)
	var wire *jsonrpc.Error
	switch {
	case errors.Is(err, mcpkeep.ErrGenerationGone):
		e.release()
		f.relay.seen(e, tasks.Failed.String()) // as lostRelayed answers
		return f.lostRelayed(method, id, e)
	case errors.As(err, &wire):
		return nil, true, wire // the server's own answer, -32602 included
	case err != nil:
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpkeep: task " + id + ": " + err.Error()}
	case method == "tasks/cancel":
		e.release() // the host gave up on the task
		return &taskAck{ResultType: "complete"}, true, nil
	case method != "tasks/get":
		return &taskAck{ResultType: "complete"}, true, nil
	}
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &st) == nil {
		f.relay.seen(e, st.Status)
		switch st.Status {
		case "completed", "failed", "cancelled":
			e.release() // the server's work is done
		}
	}
	out, err := withTaskID(raw, id)
	if err != nil {
		return nil, true, err
	}
	return &relayedResult{raw: out}, true, nil
}

// lostReasonKey is the machine-readable reason of a relayed task whose
// generation ended, as the engine's for a kept task lost with its server.
const lostReasonKey = "server_lost_outcome_unknown"

// lostRelayed answers for a handle whose generation ended: the server's
// next run never heard of the task.
func (f *taskFront) lostRelayed(method, id string, e *relayedEntry) (mcp.Result, bool, error) {
	switch method {
	case "tasks/cancel":
		return &taskAck{ResultType: "complete"}, true, nil // nothing runs any more
	case "tasks/update":
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("mcpkeep: task %q can take no input: server %q restarted since it made it", id, e.server)}
	}
	msg := fmt.Sprintf("mcpkeep: server %q restarted (generation %d ended) while it held this task; its state was lost with it, "+
		"and the outcome is unknown (the work may or may not have taken effect); it was not run again", e.server, e.gen)
	data, _ := json.Marshal(map[string]any{"server": e.server, "generation": e.gen, "reason": lostReasonKey})
	now := f.relay.clock.Now().UTC().Format(time.RFC3339Nano)
	return &detailedTask{ResultType: "complete",
		taskFields: taskFields{TaskID: id, Status: tasks.Failed.String(), StatusMessage: msg,
			CreatedAt: e.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: now, TTLMs: e.ttl.Milliseconds()},
		Error: &tasks.RPCError{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}}, true, nil
}
