package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks at the front (docs/design.md §25). The proxy advertises the
// tasks extension and keeps tasks itself for every tool of every server
// (tasks.Engine): a host that declared the extension on a tools/call
// (its request's clientCapabilities on 2026-07-28, its initialize's on a
// session) gets a task for it as the server's "tasks" policy says, and
// then tasks/get, tasks/update and tasks/cancel. The task's call runs
// detached from the host's request through Pool.CallRaw, so a lost
// server is Call's business (§21): a replay-safe call is re-sent on the
// next generation and the task stays working; any other fails with the
// outcome-unknown reason. A host that did not opt in is answered as
// before: never a task it cannot read.

// tasksExtension is the extension's name in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskFront is the proxy's side of the extension.
type taskFront struct {
	s     *Server
	e     *tasks.Engine
	relay *relayTable // the handles of servers' own tasks (tasks_relay.go)
}

// setupTasks makes the engine and registers the extension's methods and
// the tools/call middleware on the front (called by New, after the
// front's own middleware, so a host's first request still starts the
// servers first).
func (s *Server) setupTasks() {
	o := s.opts.Tasks
	if o.Logger == nil {
		o.Logger = s.log
	}
	if o.MaxPerOwner == 0 {
		// The front has no host identity today (every task's owner is
		// ""), so a per-host bound would be a second, smaller total.
		o.MaxPerOwner = max(o.MaxTotal, tasks.DefaultMaxTotal)
	}
	if rp := s.opts.Replicas; rp != nil && o.NewID == nil {
		// Owner-named (docs/design.md §26): a tasks/* request reaching
		// another replica is forwarded here, where the task runs.
		o.NewID = func() string { return rp.Names.Name(replica.KindTask, rand.Text()) }
	}
	o.IsLost = func(err error) bool { return errors.Is(err, mcpkeep.ErrConnectionLost) }
	o.RPCError = taskRPCError
	e, err := tasks.New(o)
	if err != nil {
		// Options come from the command's own defaults; a library user's
		// bad options leave the proxy without tasks, loudly.
		s.log.Error("tasks disabled", slog.Any("err", err))
		return
	}
	f := &taskFront{s: s, e: e, relay: newRelayTable(o, s.opts.Replicas)}
	s.tasks = f
	s.health.tasks = f.byName
	mcp.AddReceivingCustomMethod(s.srv, "tasks/get", f.get)
	mcp.AddReceivingCustomMethod(s.srv, "tasks/update", f.update)
	mcp.AddReceivingCustomMethod(s.srv, "tasks/cancel", f.cancel)
	s.srv.AddReceivingMiddleware(f.middleware)
}

// withTasksExtension advertises the extension (server/discover and
// initialize).
func withTasksExtension(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	c.AddExtension(tasksExtension, map[string]any{})
	return c
}

// optedIn reports whether the request declared the extension: its own
// clientCapabilities on 2026-07-28, else its session's initialize.
func optedIn(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// wanted reports whether a fast-path candidate opted in to tasks: on its
// session's initialize, or in its request's clientCapabilities (raw, on
// 2026-07-28). Then it takes the typed path, where the middleware is.
func (f *taskFront) wanted(ip *mcp.InitializeParams, rawCaps json.RawMessage) bool {
	return f != nil && (optedIn(ip.Capabilities) || bytes.Contains(rawCaps, []byte(`"`+tasksExtension+`"`)))
}

// policy is server's "tasks" policy; a server configured without one
// (`mcpkeep run` builds its config.Server itself) takes the default.
func (s *Server) taskPolicy(server string) config.Tasks {
	s.mu.Lock()
	cfg := s.mu.cfg
	s.mu.Unlock()
	if cfg != nil {
		for _, sc := range cfg.Servers {
			if sc.Name == server && sc.Tasks.Mode != "" {
				return sc.Tasks
			}
		}
	}
	return config.DefaultTasks
}

// required reports whether the public tool's mode is "required": the
// fast path (§24) leaves its calls to the middleware, which refuses a
// host that did not opt in.
func (f *taskFront) required(public string) bool {
	if f == nil {
		return false
	}
	server, exposed := f.s.up.exposedBy(public)
	return exposed && f.s.toolTaskMode(f.s.taskPolicy(server), public) == config.TasksRequired
}

// toolTaskMode is the mode of the public tool under its server's policy:
// the "tools" entry of the tool's name as the server offers it, else the
// server's mode (docs/design.md §25).
func (s *Server) toolTaskMode(pol config.Tasks, public string) string {
	if len(pol.Tools) == 0 {
		return pol.Mode
	}
	if lk, ok := s.up.pool().Sink().(tools.Lookuper); ok {
		if _, t, ok := lk.Lookup(public); ok {
			return pol.ModeFor(t.Name)
		}
	}
	return pol.Mode
}

// middleware answers an opted-in tools/call with a task, and a call of a
// "required" tool from a host that did not opt in with -32021.
func (f *taskFront) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		if rs := r.Params.RequestState; rs != "" {
			if st, werr := f.s.host.bridges.sealer().open(rs); werr == nil && st.Task != "" {
				return f.resume(ctx, r, st) // tasks_rounds.go
			}
			return next(ctx, method, req) // a bridge's round (tools.go), or a state it refuses
		}
		server, exposed := f.s.up.exposedBy(r.Params.Name)
		if !exposed {
			return next(ctx, method, req) // the unknown-tool answer, as before
		}
		pol := f.s.taskPolicy(server)
		mode := f.s.toolTaskMode(pol, r.Params.Name)
		if !optedIn(r.ClientCapabilities()) {
			if mode == config.TasksRequired {
				return nil, extensionRequired() // tasks_gate.go
			}
			return next(ctx, method, req)
		}
		if mode == config.TasksNever {
			return next(ctx, method, req)
		}
		if f.relays(server, mode) {
			return f.relayCall(ctx, r, server) // the server's own task (tasks_relay.go)
		}
		rec, err := f.e.Create(tasks.Spec{Server: server, Tool: r.Params.Name, TTL: pol.TTL,
			Ctx: mcpkeep.TraceFrom(context.Background(), ctx),
			Run: f.runner(r.Params.Name, r.Params.Arguments, r.ClientCapabilities(), requestLevel(req))})
		if err != nil {
			return nil, taskRefused(err)
		}
		if mode == config.TasksAuto {
			// Inline, input required (a 2026-07-28 host), or the task
			// (tasks_rounds.go).
			return f.answer(ctx, rec.ID, taskCall{server: server, tool: r.Params.Name, modern: modernToolCall(r)}, pol.Grace)
		}
		return createResult(rec), nil
	}
}

// finished answers the call of a task that ended as a call, and forgets
// the task; ok is false when the task is not found ended.
func (f *taskFront) finished(id string, modern bool) (mcp.Result, error, bool) {
	rec, err := f.e.Get(context.Background(), "", id)
	if err != nil || !rec.Status.Terminal() {
		return nil, nil, false
	}
	f.e.Forget(id)
	switch {
	case rec.Status == tasks.Completed:
		res, err := inlineResult(rec.Result, modern) // tasks_inline.go
		if err != nil {
			return nil, fmt.Errorf("mcpkeep: the tool's result: %w", err), true
		}
		return res, nil, true
	case rec.Error != nil && rec.StatusMessage == "":
		return nil, &jsonrpc.Error{Code: rec.Error.Code, Message: rec.Error.Message, Data: rec.Error.Data}, true
	}
	raw, err := json.Marshal(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "mcpkeep: " + rec.StatusMessage}}})
	if err == nil {
		var res *mcp.CallToolResult
		if res, err = inlineResult(raw, modern); err == nil {
			return res, nil, true
		}
	}
	return nil, err, true
}

// runner is a task's call: Pool.CallRaw on a context of its own, told
// the host's capabilities of the creating request, hearing Call's replay.
// Failures of the connection other than a loss become tool results with
// isError, as for a call (upstream.result); a loss is the engine's to
// judge; a server's JSON-RPC error fails the task with it.
func (f *taskFront) runner(public string, args json.RawMessage, caps *mcp.ClientCapabilities, level mcp.LoggingLevel) tasks.Runner {
	return func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
		pool := f.s.getPool()
		if pool == nil {
			return nil, errors.New("mcpkeep: no servers yet")
		}
		ctx = mcpkeep.WithReplayNotice(mcpkeep.WithHostCapabilities(ctx, caps), h.Resending)
		ctx = withCarrier(ctx, via{task: &taskCarrier{hooks: h, caps: caps}})
		ctx, done := f.s.track(ctx)
		defer done()
		start := time.Now()
		raw, err := pool.CallRaw(ctx, public, args, &mcpkeep.CallOptions{LogLevel: level})
		f.s.observeRequest(f.s.up.serverOf(public), "tools/call", start, err)
		if err == nil {
			// A task the server made although the call did not declare the
			// extension to it (tasks_relay_unasked.go) is no result.
			err = unaskedRaw(f.s.up.serverOf(public), public, raw)
		}
		var wire *jsonrpc.Error
		if err == nil || errors.Is(err, mcpkeep.ErrConnectionLost) || errors.As(err, &wire) || ctx.Err() != nil {
			return raw, err
		}
		if inputFailed(err) {
			return nil, err // the task fails saying why (tasks_input.go)
		}
		return json.Marshal(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: describe(pool, err)}}})
	}
}

// taskRPCError keeps a server's JSON-RPC error as the task's; a call
// whose input requests mcpkeep could not carry says why in its data's
// reason (tasks_input.go), as a failure mcpkeep made does (T5).
func taskRPCError(err error) *tasks.RPCError {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return &tasks.RPCError{Code: wire.Code, Message: wire.Message, Data: wire.Data}
	}
	e := &tasks.RPCError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	if reason := inputReason(err); reason != "" {
		e.Data, _ = json.Marshal(map[string]string{"reason": reason})
	}
	return e
}

// taskRefused is a bound's answer: at once, never queued.
func taskRefused(err error) error {
	var le *tasks.LimitError
	if errors.As(err, &le) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("mcpkeep: too many tasks (%s %d); try again when some have finished", le.Bound, le.Limit)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpkeep: " + err.Error()}
}

// taskFields are the task's fields on the wire (ttlMs, pollIntervalMs:
// integer milliseconds).
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

func fieldsOf(rec tasks.Record) taskFields {
	return taskFields{TaskID: rec.ID, Status: rec.Status.String(), StatusMessage: rec.StatusMessage,
		CreatedAt: rec.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: rec.UpdatedAt.UTC().Format(time.RFC3339Nano),
		TTLMs: rec.TTLMs, PollIntervalMs: rec.PollIntervalMs}
}

// createTaskResult answers a tools/call with a task (resultType "task").
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
}

func createResult(rec tasks.Record) *createTaskResult {
	return &createTaskResult{ResultType: "task", taskFields: fieldsOf(rec)}
}

// detailedTask answers tasks/get: the task, with its result or error
// inline once finished, and its open input requests.
type detailedTask struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *tasks.RPCError            `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// taskAck answers tasks/update and tasks/cancel: an empty result.
type taskAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskUpdateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// unknownTask is the spec's answer to an unknown or expired id.
func unknownTask(id string, err error) error {
	if errors.Is(err, tasks.ErrNotFound) || errors.Is(err, tasks.ErrBadRecord) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpkeep: no task %q (unknown, or expired after its TTL)", id)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpkeep: task " + id + ": " + err.Error()}
}

func needID(id string) error {
	if id == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcpkeep: params.taskId is required"}
	}
	return nil
}

func (f *taskFront) get(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	if err := needExtension(ss, p.Meta); err != nil { // tasks_gate.go
		return nil, err
	}
	if err := needID(p.TaskID); err != nil {
		return nil, err
	}
	if res, ok, err := f.relayed(ctx, "tasks/get", p.TaskID, nil); ok { // tasks_relay.go
		return res, err
	}
	rec, err := f.e.Get(ctx, "", p.TaskID)
	if err != nil {
		return nil, unknownTask(p.TaskID, err)
	}
	return &detailedTask{ResultType: "complete", taskFields: fieldsOf(rec), Result: rec.Result, Error: rec.Error, InputRequests: rec.InputRequests}, nil
}

func (f *taskFront) update(ctx context.Context, ss *mcp.ServerSession, p *taskUpdateParams) (mcp.Result, error) {
	if err := needExtension(ss, p.Meta); err != nil { // tasks_gate.go
		return nil, err
	}
	if err := needID(p.TaskID); err != nil {
		return nil, err
	}
	if res, ok, err := f.relayed(ctx, "tasks/update", p.TaskID, p.InputResponses); ok { // tasks_relay.go
		return res, err
	}
	if _, err := f.e.Update("", p.TaskID, p.InputResponses); err != nil {
		return nil, unknownTask(p.TaskID, err)
	}
	return &taskAck{ResultType: "complete"}, nil
}

func (f *taskFront) cancel(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	if err := needExtension(ss, p.Meta); err != nil { // tasks_gate.go
		return nil, err
	}
	if err := needID(p.TaskID); err != nil {
		return nil, err
	}
	if res, ok, err := f.relayed(ctx, "tasks/cancel", p.TaskID, nil); ok { // tasks_relay.go
		return res, err
	}
	if _, err := f.e.Cancel(ctx, "", p.TaskID); err != nil {
		return nil, unknownTask(p.TaskID, err)
	}
	return &taskAck{ResultType: "complete"}, nil
}

// close ends the tasks still working (failed: mcpkeep stopped) and keeps
// their records, before Shutdown cancels the calls in flight.
func (f *taskFront) close(ctx context.Context) error {
	if f == nil {
		return nil
	}
	f.relay.close()
	return f.e.Close(ctx)
}

// byName is counts keyed by the states' names (/readyz).
func (f *taskFront) byName() map[string]int {
	out := map[string]int{}
	for st, n := range f.counts() {
		out[st.String()] = n
	}
	return out
}

// counts is the one source of the task counts (mcpkeep status, /readyz,
// /metrics; docs/design.md §25): the engine's tasks and the relayed
// handles (tasks_relay.go) by the state last seen from their server,
// merged into the same states.
func (f *taskFront) counts() map[tasks.State]int {
	out := f.e.Counts()
	if f.relay == nil {
		return out
	}
	if out == nil {
		out = map[tasks.State]int{}
	}
	pool := f.s.getPool()
	live := func(server string, gen uint64) bool {
		if pool == nil {
			return false
		}
		sup, ok := pool.Supervisor(server)
		return ok && sup.GenerationLive(gen)
	}
	for st, n := range f.relay.counts(live) {
		out[st] += n
	}
	return out
}

// Tasks returns the tasks by state, working and kept, and the relayed
// ones by the state their server last gave (mcpkeep status, /readyz,
// /metrics; docs/design.md §25); nil when the proxy keeps no tasks.
func (s *Server) Tasks() map[tasks.State]int {
	if s.tasks == nil {
		return nil
	}
	return s.tasks.counts()
}
