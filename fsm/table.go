package fsm

// Transition is one declared row of the lifecycle table. The table is data:
// the supervisor, the diagrams, the replay checker and the tests all read
// the same rows.
type Transition struct {
	From  State
	Event Event
	Guard Guard
	To    State
	// Internal transitions do not change state (docs/design.md §3); looplab/fsm
	// reports them as NoTransitionError, which Fire treats as success.
	Internal bool
	// Log is the exact message the driver logs on this transition, if any.
	Log string
	// Effects says, in the spec's words, what entering the target does.
	Effects string
	// Carries lists the invariants this transition is responsible for.
	Carries []Invariant
}

// Table is the lifecycle (docs/design.md §3), row for row. Every event of a
// generation (or of a timer) is guarded by its currency: the guards are the
// supervisor's only filter of stale and repeated signals.
var Table = []Transition{
	{From: Connecting, Event: Connected, Guard: GenCurrent, To: Established,
		Log:     "recovered",
		Effects: "initial tools sync done and swapped in; stability timer armed; log recovered if this was a retry",
		Carries: []Invariant{I2, I7}},
	{From: Connecting, Event: Failed, Guard: FirstFailure, To: Lost,
		Log:     "connection failed",
		Effects: "the attempt is closed",
		Carries: []Invariant{I1, I7}},
	{From: Connecting, Event: ToolsChanged, Guard: GenCurrent, To: Connecting, Internal: true,
		Effects: "marks the sync dirty; the activation's own sync owns strict startup registration",
		Carries: []Invariant{I2, I7}},
	{From: Connecting, Event: CatalogChanged, Guard: GenCurrent, To: Connecting, Internal: true,
		Effects: "prompts or resources list_changed: marks that kind dirty for after the activation's own sync",
		Carries: []Invariant{I7}},
	{From: Connecting, Event: Dispose, Guard: Always, To: Draining,
		Effects: "the attempt's context is cancelled; its process is reaped before disposed",
		Carries: []Invariant{I1, I6}},

	{From: Established, Event: Closed, Guard: GenCurrent, To: Lost,
		Log:     "connection lost",
		Effects: "gen context cancelled: in-flight calls fail now",
		Carries: []Invariant{I1, I7}},
	{From: Established, Event: Stable, Guard: GenCurrent, To: Established, Internal: true,
		Effects: "budget reset to zero",
		Carries: []Invariant{I4}},
	{From: Established, Event: ToolsChanged, Guard: GenCurrent, To: Established, Internal: true,
		Effects: "one sync enqueued (coalesced)",
		Carries: []Invariant{I2, I7}},
	{From: Established, Event: CatalogChanged, Guard: GenCurrent, To: Established, Internal: true,
		Effects: "one sync of that kind enqueued (coalesced per kind)",
		Carries: []Invariant{I7}},
	{From: Established, Event: IdleTimeout, Guard: Quiet, To: Lost,
		Effects: "idle stop: the generation, closed to new calls before the guard was read, is closed through its barrier; catalog kept, the host told nothing",
		Carries: []Invariant{I1, I7}},
	{From: Established, Event: Reconnect, Guard: Always, To: Lost,
		Effects: "manual restart: close the current gen",
		Carries: []Invariant{I1}},
	{From: Established, Event: Dispose, Guard: Always, To: Draining,
		Effects: "gen context cancelled; close barrier awaited",
		Carries: []Invariant{I1, I6}},

	{From: Lost, Event: Released, Guard: BudgetLeft, To: BackingOff,
		Log:     "reconnecting",
		Effects: "previous gen is closed: never two processes; retry timer armed",
		Carries: []Invariant{I1, I4, I5}},
	{From: Lost, Event: Released, Guard: BudgetSpent, To: Exhausted,
		Log:     "gave up",
		Effects: "tools unregistered",
		Carries: []Invariant{I3, I4}},
	{From: Lost, Event: Released, Guard: SignIn, To: Exhausted,
		Log:     "sign-in required",
		Effects: "no retry spent; tools stay registered and fail with the command to sign in, until a manual reconnect",
		Carries: []Invariant{I4}},
	{From: Lost, Event: Released, Guard: ReconnectOff, To: Exhausted,
		Log:     "reconnect disabled",
		Effects: "tools stay registered and fail (manual recovery)",
		Carries: []Invariant{I4}},
	{From: Lost, Event: Released, Guard: StoppingForIdle, To: Idle,
		Effects: "no process, catalog kept; the generation served until a clean stop, so the budget is reset as by stable; a demand that came during the barrier starts the next generation now",
		Carries: []Invariant{I1, I4}},
	{From: Lost, Event: Stuck, Guard: GenCurrent, To: Exhausted,
		Effects: "no close signal within the termination window: fail closed, never start another process; tools unregistered",
		Carries: []Invariant{I1, I3}},
	{From: Lost, Event: Dispose, Guard: Always, To: Draining,
		Effects: "the pending close barrier is awaited",
		Carries: []Invariant{I1, I6}},

	{From: BackingOff, Event: RetryDue, Guard: TimerCurrent, To: Connecting,
		Effects: "gen n+1",
		Carries: []Invariant{I1, I5}},
	{From: BackingOff, Event: Reconnect, Guard: Always, To: Connecting,
		Effects: "skip the wait",
		Carries: []Invariant{I5}},
	{From: BackingOff, Event: Dispose, Guard: Always, To: Draining,
		Effects: "timer cancelled",
		Carries: []Invariant{I5, I6}},

	{From: Exhausted, Event: Reconnect, Guard: Always, To: Connecting,
		Effects: "budget reset",
		Carries: []Invariant{I4}},
	{From: Exhausted, Event: Dispose, Guard: Always, To: Draining,
		Carries: []Invariant{I6}},

	{From: Idle, Event: Demand, Guard: Always, To: Connecting,
		Effects: "gen n+1 for the request that needs the server; the request waits for it",
		Carries: []Invariant{I1}},
	{From: Idle, Event: Reconnect, Guard: Always, To: Connecting,
		Effects: "gen n+1",
		Carries: []Invariant{I1}},
	{From: Idle, Event: Dispose, Guard: Always, To: Draining,
		Effects: "nothing to wait for: no process",
		Carries: []Invariant{I6}},

	{From: Draining, Event: Drained, Guard: Always, To: Disposed,
		Effects: "attempt, sync and barrier all settled; tools unregistered; every goroutine joined",
		Carries: []Invariant{I3, I6}},
	{From: Draining, Event: DrainTimeout, Guard: Always, To: Disposed,
		Log:     "incomplete shutdown",
		Effects: "never restarts; tools unregistered",
		Carries: []Invariant{I3}},
}

// Initial is the state a supervisor enters when the host calls Start;
// a lazy server with a cached catalog enters Idle instead
// (docs/design.md §20).
const Initial = Connecting

// Rows returns the declared rows for (from, ev), in declaration order.
func Rows(from State, ev Event) []Transition {
	var out []Transition
	for _, t := range Table {
		if t.From == from && t.Event == ev {
			out = append(out, t)
		}
	}
	return out
}

// Find returns the declared row for (from, ev) that leads to to. Replay
// uses it: a trace records the outcome, not the facts the guards read.
func Find(from State, ev Event, to State) (Transition, bool) {
	for _, t := range Table {
		if t.From == from && t.Event == ev && t.To == to {
			return t, true
		}
	}
	return Transition{}, false
}
