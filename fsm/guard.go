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
}

// Guard is a named predicate declared with a transition. Its Name is what
// the diagrams print on the edge.
type Guard struct {
	Name  string
	Holds func(Facts) bool
}

// Always is the absent guard.
var Always = Guard{Name: "", Holds: func(Facts) bool { return true }}

var (
	GenCurrent = Guard{Name: "gen is current",
		Holds: func(f Facts) bool { return !f.Stale }}
	FirstFailure = Guard{Name: "gen is current ∧ first failure signal of gen",
		Holds: func(f Facts) bool { return !f.Stale && !f.Repeated }}
	BudgetLeft = Guard{Name: "reconnect enabled ∧ budget left",
		Holds: func(f Facts) bool { return !f.ReconnectDisabled && !f.BudgetSpent }}
	BudgetSpent = Guard{Name: "reconnect enabled ∧ budget spent",
		Holds: func(f Facts) bool { return !f.ReconnectDisabled && f.BudgetSpent }}
	ReconnectOff = Guard{Name: "reconnect disabled",
		Holds: func(f Facts) bool { return f.ReconnectDisabled }}
)

// Guards lists every named guard (Always excluded).
var Guards = []Guard{GenCurrent, FirstFailure, BudgetLeft, BudgetSpent, ReconnectOff}

// key is a stable identifier used to keep guarded rows distinct for
// looplab/fsm, whose table is keyed by (event, source) only.
func (g Guard) key() string {
	switch g.Name {
	case "":
		return ""
	case GenCurrent.Name:
		return "gen_current"
	case FirstFailure.Name:
		return "first_failure"
	case BudgetLeft.Name:
		return "budget_left"
	case BudgetSpent.Name:
		return "budget_spent"
	case ReconnectOff.Name:
		return "reconnect_off"
	}
	return "guard"
}
