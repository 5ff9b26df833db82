package fsm

// Facts are what guards read. The zero value is the common case (the
// event's generation is current, it is the generation's first failure
// signal, reconnect is enabled and budget is left), so a caller names only
// what is unusual.
type Facts struct {
	// Stale: the event belongs to a generation that is no longer current.
	Stale bool
	// Repeated: a second failure signal for the same generation.
	Repeated bool
	// ReconnectDisabled: the server's policy has reconnect turned off.
	ReconnectDisabled bool
	// BudgetSpent: every retry of this outage has been used.
	BudgetSpent bool
	// SignInRequired: the generation ended because the server wants a
	// sign-in that only a person can give (docs/design.md §22).
	SignInRequired bool
	// Busy: a request is in flight, a resource subscription is held, or a
	// request came within the idle window (docs/design.md §20).
	Busy bool
	// IdleStop: the generation was ended by an idle stop, not lost.
	IdleStop bool
	// CallsOpen: the generation still admits new requests. An idle stop
	// first closes it to them and only then reads Busy, so no request
	// can start between the check and the stop (docs/design.md §20).
	CallsOpen bool
}

// Guard is a named predicate declared with a transition. Key identifies
// it (stable, for code, counters and looplab's event names); Name is what
// the diagrams print on the edge and may be reworded freely.
type Guard struct {
	Key   string
	Name  string
	Holds func(Facts) bool
}

// Always is the absent guard.
var Always = Guard{Key: "", Name: "", Holds: func(Facts) bool { return true }}

var (
	// GenCurrent: the event's generation is the current one.
	GenCurrent = Guard{Key: "gen_current", Name: "gen is current",
		Holds: func(f Facts) bool { return !f.Stale }}
	// FirstFailure: the generation is current and has not failed before.
	FirstFailure = Guard{Key: "first_failure", Name: "gen is current ∧ first failure signal of gen",
		Holds: func(f Facts) bool { return !f.Stale && !f.Repeated }}
	// TimerCurrent: the timer that fired is the one armed now (a retry
	// timer of an earlier backoff is stale).
	TimerCurrent = Guard{Key: "timer_current", Name: "timer is current",
		Holds: func(f Facts) bool { return !f.Stale }}
	BudgetLeft = Guard{Key: "budget_left", Name: "reconnect enabled ∧ budget left",
		Holds: func(f Facts) bool { return !f.IdleStop && !f.ReconnectDisabled && !f.SignInRequired && !f.BudgetSpent }}
	BudgetSpent = Guard{Key: "budget_spent", Name: "reconnect enabled ∧ budget spent",
		Holds: func(f Facts) bool { return !f.IdleStop && !f.ReconnectDisabled && !f.SignInRequired && f.BudgetSpent }}
	// SignIn: retrying cannot help until a person signs in, so no retry
	// is spent on it.
	SignIn = Guard{Key: "sign_in", Name: "reconnect enabled ∧ sign-in required",
		Holds: func(f Facts) bool { return !f.IdleStop && !f.ReconnectDisabled && f.SignInRequired }}
	ReconnectOff = Guard{Key: "reconnect_off", Name: "reconnect disabled",
		Holds: func(f Facts) bool { return !f.IdleStop && f.ReconnectDisabled }}
	// Quiet: the idle timer of the current generation fired, the
	// generation is closed to new requests, and then nothing was in
	// flight, no subscription held and no recent request seen.
	Quiet = Guard{Key: "quiet", Name: "gen is current ∧ closed to new calls ∧ nothing in flight ∧ no subscription",
		Holds: func(f Facts) bool { return !f.Stale && !f.CallsOpen && !f.Busy }}
	// StoppingForIdle: the released generation was ended by an idle
	// stop: no outage, the budget untouched.
	StoppingForIdle = Guard{Key: "idle_stop", Name: "stopping for idle",
		Holds: func(f Facts) bool { return f.IdleStop }}
)

// Guards lists every named guard (Always excluded).
var Guards = []Guard{GenCurrent, FirstFailure, TimerCurrent, BudgetLeft, BudgetSpent, SignIn, ReconnectOff, Quiet, StoppingForIdle}

// Rejecting calls visit with the guard of each row of (from, ev) that does
// not hold for facts: the drivers count what each guard refused.
func Rejecting(from State, ev Event, facts Facts, visit func(Guard)) {
	if int(from) >= len(States) || int(ev) >= len(Events) {
		return
	}
	for _, i := range compiled.rows[int(from)*len(Events)+int(ev)] {
		if g := Table[i].Guard; !g.Holds(facts) {
			visit(g)
		}
	}
}
