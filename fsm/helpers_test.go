package fsm_test

import (
	"errors"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// allFacts is every combination of the eight Facts booleans (256).
func allFacts() []fsm.Facts {
	var out []fsm.Facts
	for i := range 256 {
		out = append(out, fsm.Facts{
			Stale:             i&1 != 0,
			Repeated:          i&2 != 0,
			ReconnectDisabled: i&4 != 0,
			BudgetSpent:       i&8 != 0,
			SignInRequired:    i&16 != 0,
			Busy:              i&32 != 0,
			IdleStop:          i&64 != 0,
			CallsOpen:         i&128 != 0,
		})
	}
	return out
}

// sameRow reports whether a and b are the same declared row (Transition
// holds a func, so it is not comparable with ==).
func sameRow(a, b fsm.Transition) bool {
	return a.From == b.From && a.Event == b.Event && a.To == b.To && a.Guard.Name == b.Guard.Name
}

// rowIndex returns t's index in fsm.Table, or -1.
func rowIndex(t fsm.Transition) int {
	for i, r := range fsm.Table {
		if sameRow(r, t) {
			return i
		}
	}
	return -1
}

// tb is what fire needs of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// fire fires ev and checks that looplab's view agrees with Machine.State
// afterwards, whatever the outcome.
func fire(t tb, m *fsm.Machine, ev fsm.Event, f fsm.Facts) (fsm.Transition, error) {
	t.Helper()
	tr, err := m.Fire(ev, f)
	if got, want := fsm.LooplabState(m), m.State().String(); got != want {
		t.Fatalf("after %s: looplab is in %q, Machine in %q", ev, got, want)
	}
	var ee *fsm.EventError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("Fire(%s) error %v is not an *EventError", ev, err)
	}
	return tr, err
}
