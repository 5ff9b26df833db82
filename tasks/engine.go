package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Runner runs a task's call, detached from the host's request: ctx ends
// when the task is cancelled, expires or the engine closes (T4). The
// proxy's runner calls Pool.CallRaw, so Call's outage and safe-replay
// rules (docs/design.md §21) apply unchanged; h lets it report a replay
// and ask the host for input.
type Runner func(ctx context.Context, h Hooks) (json.RawMessage, error)

// Spec is what a task is made of.
type Spec struct {
	// Owner is the host identity; other hosts do not find the task.
	Owner, Server, Tool string
	// TTL: zero takes Options.DefaultTTL; capped at Options.MaxTTL.
	TTL time.Duration
	// Ctx carries values (trace, identity) to the run, not its
	// cancellation; nil is context.Background().
	Ctx context.Context
	Run Runner
}

// Engine keeps tasks by Table (docs/design.md §25). Working tasks live in
// its memory; finished ones go to its Store until they expire. Its
// methods are safe for concurrent use; no lock is held across a call or
// a Store operation.
type Engine struct {
	o Options

	mu        sync.Mutex
	closed    bool
	live      map[string]*task
	kept      map[string]*keptTask
	keptBytes int64
	lastSweep time.Time
	wg        sync.WaitGroup
}

type task struct {
	rec    Record
	cancel context.CancelFunc
	timer  *clock.Timer
	inputs map[string]chan json.RawMessage
	done   chan struct{}
	// moved is closed, and replaced, at each change of the task (its
	// status, its open input requests, its end): Watch.
	moved chan struct{}
}

// keptTask is what the engine knows of a finished task it put in the
// Store: enough to bound and expire it without reading the Store. rec is
// the record itself until the Store has it (or for good, if Put failed).
type keptTask struct {
	owner   string
	state   State
	bytes   int64
	expires time.Time
	rec     *Record
}

// Errors of the engine's API (the front maps them to the spec's codes).
var (
	// ErrTooMany: a bound on tasks is reached; the host gets the error
	// at once, never a queue. The error is a *LimitError.
	ErrTooMany = errors.New("too many tasks")
	// ErrClosed: the engine is closed.
	ErrClosed = errors.New("task engine closed")
)

// LimitError names the bound a new task would pass.
type LimitError struct {
	Bound string // "MaxPerOwner", "MaxTotal" or "MaxKeptBytes"
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("tasks: %s reached (%d): %v", e.Bound, e.Limit, ErrTooMany)
}

func (e *LimitError) Unwrap() error { return ErrTooMany }

// New returns an engine; it sweeps its Store's expired records first.
func New(o Options) (*Engine, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{o: o, live: map[string]*task{}, kept: map[string]*keptTask{}}
	if sw, ok := o.Store.(Sweeper); ok {
		if _, err := sw.Sweep(context.Background(), o.Clock.Now()); err != nil {
			o.Logger.Warn("tasks: sweeping the store", slog.Any("err", err))
		}
	}
	e.lastSweep = o.Clock.Now()
	return e, nil
}

// Create starts a task running s.Run and returns its record (working).
// Over a bound it returns a *LimitError and runs nothing.
func (e *Engine) Create(s Spec) (Record, error) {
	e.sweep()
	ttl := s.TTL
	if ttl <= 0 {
		ttl = e.o.DefaultTTL
	}
	ttl = min(ttl, e.o.MaxTTL)
	base := s.Ctx
	if base == nil {
		base = context.Background()
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return Record{}, ErrClosed
	}
	if err := e.admitLocked(s.Owner); err != nil {
		e.mu.Unlock()
		return Record{}, err
	}
	now := e.o.Clock.Now()
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	t := &task{
		rec: Record{ID: e.o.NewID(), Status: Initial, CreatedAt: now, UpdatedAt: now,
			TTLMs: ttl.Milliseconds(), PollIntervalMs: e.o.PollInterval.Milliseconds(), ExpiresAt: now.Add(ttl),
			Owner: s.Owner, Server: s.Server, Tool: s.Tool},
		cancel: cancel,
		inputs: map[string]chan json.RawMessage{},
		done:   make(chan struct{}),
		moved:  make(chan struct{}),
	}
	e.live[t.rec.ID] = t
	id := t.rec.ID
	t.timer = e.o.Clock.AfterFunc(ttl, func() { e.expire(id) })
	rec := t.snapshot()
	e.wg.Add(1)
	e.mu.Unlock()
	e.changed(rec)
	go func() {
		defer e.wg.Done()
		res, err := s.Run(ctx, Hooks{e: e, t: t})
		e.finish(t, res, err)
	}()
	return rec, nil
}

// admitLocked checks the bounds for a new task of owner.
func (e *Engine) admitLocked(owner string) error {
	total, mine := len(e.live)+len(e.kept), 0
	for _, t := range e.live {
		if t.rec.Owner == owner {
			mine++
		}
	}
	for _, k := range e.kept {
		if k.owner == owner {
			mine++
		}
	}
	switch {
	case mine >= e.o.MaxPerOwner:
		return &LimitError{Bound: "MaxPerOwner", Limit: int64(e.o.MaxPerOwner)}
	case total >= e.o.MaxTotal:
		return &LimitError{Bound: "MaxTotal", Limit: int64(e.o.MaxTotal)}
	case e.keptBytes >= e.o.MaxKeptBytes:
		return &LimitError{Bound: "MaxKeptBytes", Limit: e.o.MaxKeptBytes}
	}
	return nil
}

// finish is the end of a task's run: its result or error, as an event.
func (e *Engine) finish(t *task, res json.RawMessage, err error) {
	ev, f := Returned, Facts{}
	switch {
	case err == nil:
		f.TooLarge = len(res) > e.o.MaxResultBytes
	case e.o.IsLost(err):
		ev = Lost
	default:
		f.RPCError = true
	}
	e.fire(t, ev, f, func(r *Record, to State) {
		switch {
		case to == Completed:
			r.Result = res
		case to == Failed && f.RPCError:
			r.Error = e.o.RPCError(err)
		case to == Failed:
			r.Error = &RPCError{Code: -32603, Message: r.StatusMessage}
			data := map[string]string{"server": r.Server, "tool": r.Tool, "reason": reasonKey(ev, f)}
			if err != nil {
				data["cause"] = err.Error()
			}
			if b, merr := json.Marshal(data); merr == nil {
				r.Error.Data = b
			}
		}
	})
}

// reasonKey is the machine-readable reason of a failure mcpkeep made.
func reasonKey(ev Event, f Facts) string {
	switch {
	case ev == Lost:
		return "server_lost_outcome_unknown"
	case f.TooLarge:
		return "result_too_large"
	}
	return "failed"
}

// expire is the TTL timer of a live task.
func (e *Engine) expire(id string) {
	e.mu.Lock()
	t := e.live[id]
	e.mu.Unlock()
	if t != nil {
		e.fire(t, Expired, Facts{}, expiredError)
	}
}

func expiredError(r *Record, to State) {
	if to == Failed {
		r.Error = &RPCError{Code: -32603, Message: r.StatusMessage}
	}
}

// fire applies ev to t by Table. fill, when set, completes the record as
// it enters a terminal state. A finished task goes to the Store.
func (e *Engine) fire(t *task, ev Event, f Facts, fill func(*Record, State)) (Transition, error) {
	e.mu.Lock()
	tr, err := Resolve(t.rec.Status, ev, f)
	if err != nil {
		ended := t.rec.Status.Terminal()
		e.mu.Unlock()
		if ended {
			// A late event: its sender found the task live an instant
			// before it ended (the TTL timer, Close, an input request;
			// the task model shows these races, docs/design.md §7). The
			// task stays as it ended (T1).
			e.o.Logger.Debug("tasks: late event ignored", slog.String("task", t.rec.ID), slog.Any("err", err))
			return tr, err
		}
		e.o.Logger.Error("tasks: undeclared event", slog.String("task", t.rec.ID), slog.Any("err", err))
		return tr, err
	}
	now := e.o.Clock.Now()
	if tr.Message != "" {
		t.rec.StatusMessage = tr.Message
	}
	if tr.Internal {
		rec := t.snapshot()
		e.mu.Unlock()
		if tr.Message != "" {
			e.changed(rec)
		}
		return tr, nil
	}
	t.rec.Status, t.rec.UpdatedAt, t.rec.StatusMessage = tr.To, now, tr.Message
	if !tr.To.Terminal() {
		t.movedLocked()
		rec := t.snapshot()
		e.mu.Unlock()
		e.changed(rec)
		return tr, nil
	}
	if fill != nil {
		fill(&t.rec, tr.To)
	}
	rec := e.endLocked(t, now)
	e.mu.Unlock()
	e.changed(rec)
	e.keep(rec)
	return tr, nil
}

// endLocked retires a task that reached a terminal state: its call is
// cancelled (T4), its timer stopped, its input requests closed, and it
// moves from the live set to the kept set. An expired task is not kept.
func (e *Engine) endLocked(t *task, now time.Time) Record {
	t.cancel()
	t.timer.Stop()
	t.rec.InputRequests = nil
	clear(t.inputs)
	close(t.done)
	t.movedLocked()
	delete(e.live, t.rec.ID)
	rec := t.snapshot()
	if now.Before(rec.ExpiresAt) {
		n := int64(len(rec.Result))
		e.kept[rec.ID] = &keptTask{owner: rec.Owner, state: rec.Status, bytes: n, expires: rec.ExpiresAt, rec: &rec}
		e.keptBytes += n
	}
	return rec
}

// keep puts a finished record in the Store, then drops the engine's own
// copy. A Store that fails leaves the copy (served from memory until the
// TTL) and is logged.
func (e *Engine) keep(rec Record) {
	if !e.o.Clock.Now().Before(rec.ExpiresAt) {
		return
	}
	if err := e.o.Store.Put(context.Background(), rec); err != nil {
		e.o.Logger.Warn("tasks: keeping a finished task", slog.String("task", rec.ID), slog.Any("err", err))
		return
	}
	e.mu.Lock()
	if k := e.kept[rec.ID]; k != nil {
		k.rec = nil
	}
	e.mu.Unlock()
}

func (e *Engine) changed(rec Record) {
	if e.o.OnChange != nil {
		e.o.OnChange(rec)
	}
}

// snapshot is a copy of the record a caller may keep.
func (t *task) snapshot() Record {
	r := t.rec
	r.InputRequests = maps.Clone(t.rec.InputRequests)
	return r
}

// Get returns the task of id as owner may see it: a live task's current
// record, a finished one's from the Store. An unknown, expired or other
// owner's id matches ErrNotFound.
func (e *Engine) Get(ctx context.Context, owner, id string) (Record, error) {
	e.sweep()
	now := e.o.Clock.Now()
	e.mu.Lock()
	if t := e.live[id]; t != nil {
		if t.rec.Owner != owner {
			e.mu.Unlock()
			return Record{}, ErrNotFound
		}
		if !now.Before(t.rec.ExpiresAt) {
			// The TTL passed; the timer's goroutine may not have run yet.
			e.mu.Unlock()
			e.fire(t, Expired, Facts{}, expiredError)
			return Record{}, ErrNotFound
		}
		rec := t.snapshot()
		e.mu.Unlock()
		return rec, nil
	}
	if k := e.kept[id]; k != nil && k.rec != nil {
		rec := *k.rec
		e.mu.Unlock()
		return visible(rec, owner, now)
	}
	e.mu.Unlock()
	rec, err := e.o.Store.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	return visible(rec, owner, now)
}

// visible refuses a stored record that expired or is another owner's.
func visible(rec Record, owner string, now time.Time) (Record, error) {
	if rec.Owner != owner || !now.Before(rec.ExpiresAt) {
		return Record{}, ErrNotFound
	}
	return rec, nil
}

// Cancel asks for the task's end (tasks/cancel): a live task becomes
// cancelled and its call's context is cancelled, so the server gets
// notifications/cancelled; a finished one is left as it is (the table's
// internal rows). It returns the record after the cancel.
func (e *Engine) Cancel(ctx context.Context, owner, id string) (Record, error) {
	e.mu.Lock()
	t := e.live[id]
	e.mu.Unlock()
	if t != nil && t.rec.Owner == owner {
		e.fire(t, Cancel, Facts{}, nil)
	}
	rec, err := e.Get(ctx, owner, id)
	if err != nil {
		return Record{}, err
	}
	if _, err := Resolve(rec.Status, Cancel, Facts{}); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Update delivers the host's answers to a task's open input requests
// (tasks/update); when none is left open the task works again. Answers
// to requests that are not open are dropped, as the extension acks them.
func (e *Engine) Update(owner, id string, responses map[string]json.RawMessage) (Record, error) {
	e.mu.Lock()
	t := e.live[id]
	if t == nil || t.rec.Owner != owner {
		e.mu.Unlock()
		return Record{}, ErrNotFound
	}
	for key, v := range responses {
		if _, ok := t.inputs[key]; !ok {
			continue // an answer to nothing open (answered already, or never asked) is dropped
		}
		t.inputs[key] <- v
		delete(t.inputs, key)
		delete(t.rec.InputRequests, key)
		t.movedLocked()
	}
	answered := len(t.inputs) == 0 && t.rec.Status == InputRequired
	rec := t.snapshot()
	e.mu.Unlock()
	if answered {
		e.fire(t, InputAnswered, Facts{}, nil)
		return e.Get(context.Background(), owner, id)
	}
	return rec, nil
}

// Forget drops a finished task at once: the front answered its call
// inline (within the grace period), so no host will ask for it.
func (e *Engine) Forget(id string) {
	e.mu.Lock()
	k := e.kept[id]
	if k != nil {
		delete(e.kept, id)
		e.keptBytes -= k.bytes
	}
	e.mu.Unlock()
	if k != nil {
		if err := e.o.Store.Delete(context.Background(), id); err != nil {
			e.o.Logger.Warn("tasks: forgetting a task", slog.String("task", id), slog.Any("err", err))
		}
	}
}

// Done returns a channel closed when the task of id ends, or nil for a
// task not live.
func (e *Engine) Done(id string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.live[id]; t != nil {
		return t.done
	}
	return nil
}

// Counts returns the tasks by state: live ones and finished ones kept.
func (e *Engine) Counts() map[State]int {
	e.sweep()
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[State]int, len(States))
	for _, s := range States {
		out[s] = 0
	}
	for _, t := range e.live {
		out[t.rec.Status]++
	}
	for _, k := range e.kept {
		out[k.state]++
	}
	return out
}

// KeptBytes is the result bytes of the finished tasks kept.
func (e *Engine) KeptBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keptBytes
}

// sweep forgets finished tasks past their TTL (and, at most once per
// SweepEvery, asks a sweeping Store to do the same for records this
// engine does not know: those of a previous run).
func (e *Engine) sweep() {
	now := e.o.Clock.Now()
	var gone []string
	e.mu.Lock()
	for id, k := range e.kept {
		if !now.Before(k.expires) {
			delete(e.kept, id)
			e.keptBytes -= k.bytes
			gone = append(gone, id)
		}
	}
	full := now.Sub(e.lastSweep) >= e.o.SweepEvery
	if full {
		e.lastSweep = now
	}
	e.mu.Unlock()
	ctx := context.Background()
	for _, id := range gone {
		if err := e.o.Store.Delete(ctx, id); err != nil {
			e.o.Logger.Warn("tasks: forgetting an expired task", slog.String("task", id), slog.Any("err", err))
		}
	}
	if sw, ok := e.o.Store.(Sweeper); ok && full {
		if _, err := sw.Sweep(ctx, now); err != nil {
			e.o.Logger.Warn("tasks: sweeping the store", slog.Any("err", err))
		}
	}
}

// Close ends every live task (failed, ReasonDisposed: the call is
// cancelled and its outcome unknown), keeps their records, and waits
// for their calls to return until ctx ends.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	live := make([]*task, 0, len(e.live))
	for _, t := range e.live {
		live = append(live, t)
	}
	e.mu.Unlock()
	for _, t := range live {
		e.fire(t, Dispose, Facts{}, expiredError)
	}
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tasks: closing: calls still running: %w", ctx.Err())
	}
}
