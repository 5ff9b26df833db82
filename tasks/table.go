package tasks

import (
	"fmt"

	"github.com/mcpkeep/mcpkeep/internal/statechart"
)

// Transition is one declared row of the task table. Like fsm.Table it is
// data: the engine, the diagram and the tests read the same rows.
type Transition struct {
	From  State
	Event Event
	Guard Guard
	To    State
	// Internal rows do not change state.
	Internal bool
	// Effects says what taking the row does.
	Effects string
	// Message is the statusMessage the row sets; on a row into failed
	// without the call's own error it is the reason (T5).
	Message string
	// Carries lists the invariants this row is responsible for.
	Carries []Invariant
}

// Reasons a task fails without its call's own error (T5). They say
// whether the work may have taken effect; hosts and tests match them.
const (
	ReasonOutcomeUnknown = "the server was lost while the call ran and the call is not replay-safe " +
		"(or its server had asked the host for input: the person is never asked twice); " +
		"the outcome is unknown (the work may or may not have taken effect), so it was not run again"
	ReasonExpired = "the task's TTL passed before the call finished; the call was cancelled " +
		"and the outcome is unknown"
	ReasonDisposed   = "mcpkeep stopped while the task ran; the call was cancelled and the outcome is unknown"
	MessageResending = "the server was lost while the call ran; the call is replay-safe and is sent once more " +
		"on the server's next generation"
	ReasonTooLarge = "the call completed (the work took effect), but its result is larger than mcpkeep keeps for a task"
)

// Table is the task lifecycle (docs/design.md §25), row for row.
var Table = []Transition{
	{From: Working, Event: Returned, Guard: Answered, To: Completed,
		Effects: "the result is kept for the TTL (bounded in bytes)",
		Carries: []Invariant{T1, T3}},
	{From: Working, Event: Returned, Guard: Oversized, To: Failed,
		Effects: "the result is dropped", Message: ReasonTooLarge,
		Carries: []Invariant{T1, T5}},
	{From: Working, Event: Returned, Guard: RPCFailed, To: Failed,
		Effects: "the JSON-RPC error is kept as the task's error",
		Carries: []Invariant{T1}},
	{From: Working, Event: Lost, Guard: Replayable, To: Working, Internal: true,
		Effects: "Call re-sends it once on the next generation (§21); the task stays working",
		Message: MessageResending,
		Carries: []Invariant{T2}},
	{From: Working, Event: Lost, Guard: OutcomeUnknown, To: Failed,
		Effects: "never sent again", Message: ReasonOutcomeUnknown,
		Carries: []Invariant{T2, T5}},
	{From: Working, Event: InputRequested, Guard: Always, To: InputRequired,
		Effects: "the server's request is held; the host reads it in tasks/get",
	},
	{From: Working, Event: Cancel, Guard: Always, To: Cancelled,
		Effects: "the call's context is cancelled: the server gets notifications/cancelled",
		Carries: []Invariant{T4}},
	{From: Working, Event: Expired, Guard: Always, To: Failed,
		Effects: "the call is cancelled", Message: ReasonExpired,
		Carries: []Invariant{T4, T5}},
	{From: Working, Event: Dispose, Guard: Always, To: Failed,
		Effects: "the call is cancelled", Message: ReasonDisposed,
		Carries: []Invariant{T4, T5}},

	{From: InputRequired, Event: InputAnswered, Guard: Always, To: Working,
		Effects: "the answers go to the server's waiting requests"},
	{From: InputRequired, Event: Returned, Guard: Answered, To: Completed,
		Effects: "the server answered without waiting for the host; open input requests dropped",
		Carries: []Invariant{T1, T3}},
	{From: InputRequired, Event: Returned, Guard: Oversized, To: Failed,
		Effects: "the result is dropped", Message: ReasonTooLarge,
		Carries: []Invariant{T1, T5}},
	{From: InputRequired, Event: Returned, Guard: RPCFailed, To: Failed,
		Effects: "the JSON-RPC error is kept as the task's error",
		Carries: []Invariant{T1}},
	{From: InputRequired, Event: Lost, Guard: Always, To: Failed,
		Effects: "a call that asked the host is never re-sent (§21)", Message: ReasonOutcomeUnknown,
		Carries: []Invariant{T2, T5}},
	{From: InputRequired, Event: Cancel, Guard: Always, To: Cancelled,
		Effects: "the call's context is cancelled; its open input requests fail",
		Carries: []Invariant{T4}},
	{From: InputRequired, Event: Expired, Guard: Always, To: Failed,
		Effects: "the call is cancelled", Message: ReasonExpired,
		Carries: []Invariant{T4, T5}},
	{From: InputRequired, Event: Dispose, Guard: Always, To: Failed,
		Effects: "the call is cancelled", Message: ReasonDisposed,
		Carries: []Invariant{T4, T5}},

	// A finished task ignores what races its end: a cancel after the
	// result (the ack is empty, the result stands) and a late answer of a
	// cancelled call.
	{From: Completed, Event: Cancel, Guard: Always, To: Completed, Internal: true,
		Effects: "acknowledged; the result stands", Carries: []Invariant{T1}},
	{From: Failed, Event: Cancel, Guard: Always, To: Failed, Internal: true,
		Effects: "acknowledged; the error stands", Carries: []Invariant{T1}},
	{From: Cancelled, Event: Cancel, Guard: Always, To: Cancelled, Internal: true,
		Effects: "acknowledged again", Carries: []Invariant{T1}},
	{From: Cancelled, Event: Returned, Guard: Always, To: Cancelled, Internal: true,
		Effects: "the late answer is dropped", Carries: []Invariant{T1}},
	{From: Cancelled, Event: Lost, Guard: Always, To: Cancelled, Internal: true,
		Effects: "nothing to re-send", Carries: []Invariant{T1, T2}},
	{From: Failed, Event: Returned, Guard: Always, To: Failed, Internal: true,
		Effects: "the late answer of a call the task gave up on (TTL, dispose) is dropped", Carries: []Invariant{T1}},
	{From: Failed, Event: Lost, Guard: Always, To: Failed, Internal: true,
		Effects: "nothing to re-send", Carries: []Invariant{T1, T2}},
}

var (
	// ErrNotDeclared: no row of the table has this (state, event).
	ErrNotDeclared = statechart.ErrNotDeclared
	// ErrGuardRejected: rows exist but none of their guards holds.
	ErrGuardRejected = statechart.ErrGuardRejected
	// ErrAmbiguous: more than one guard holds; the declaration is broken.
	ErrAmbiguous = statechart.ErrAmbiguous
)

// EventError reports an event that does not apply; errors.Is matches one
// of the sentinels above.
type EventError struct {
	State State
	Event Event
	Facts Facts
	Err   error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("tasks: event %s in state %s: %v", e.Event, e.State, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }

// Resolve picks the row of (from, ev) whose guard holds for facts.
func Resolve(from State, ev Event, facts Facts) (Transition, error) {
	found, declared := -1, false
	for i, t := range Table {
		if t.From != from || t.Event != ev {
			continue
		}
		declared = true
		if t.Guard.Holds(facts) {
			if found >= 0 {
				return Transition{}, &EventError{State: from, Event: ev, Facts: facts, Err: ErrAmbiguous}
			}
			found = i
		}
	}
	switch {
	case !declared:
		return Transition{}, &EventError{State: from, Event: ev, Facts: facts, Err: ErrNotDeclared}
	case found < 0:
		return Transition{}, &EventError{State: from, Event: ev, Facts: facts, Err: ErrGuardRejected}
	}
	return Table[found], nil
}
