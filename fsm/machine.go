package fsm

import (
	"context"
	"errors"
	"fmt"

	lfsm "github.com/looplab/fsm"
)

// Machine is one lifecycle instance. It is not safe for concurrent use: the
// supervisor's single owning goroutine is the only caller, which is also why
// it never needs looplab's callbacks (and so can never fire re-entrantly).
type Machine struct {
	lf    *lfsm.FSM
	state State
}

// compiled is the looplab declaration built from Table once; each Machine
// gets its own looplab FSM over it.
var compiled = compile()

type compiledTable struct {
	events lfsm.Events
	// rows maps int(state)*len(Events)+int(event) to Table indexes.
	rows [][]int
	// names holds each row's looplab event name, built once so that Fire
	// does not build a string per step.
	names []string
}

// looplabName keeps guarded rows of one (from, event) distinct for looplab,
// whose table is keyed by (event, source) alone.
func looplabName(t Transition) string {
	if k := t.Guard.Key; k != "" {
		return t.Event.String() + "[" + k + "]"
	}
	return t.Event.String()
}

func compile() compiledTable {
	c := compiledTable{rows: make([][]int, len(States)*len(Events))}
	for i, t := range Table {
		c.events = append(c.events, lfsm.EventDesc{
			Name: looplabName(t),
			Src:  []string{t.From.String()},
			Dst:  t.To.String(),
		})
		c.names = append(c.names, looplabName(t))
		k := int(t.From)*len(Events) + int(t.Event)
		c.rows[k] = append(c.rows[k], i)
	}
	return c
}

// New returns a machine in the initial state.
func New() *Machine { return NewAt(Initial) }

// NewAt returns a machine in state s (replay starts from a recorded state).
func NewAt(s State) *Machine {
	return &Machine{
		lf:    lfsm.NewFSM(s.String(), compiled.events, nil),
		state: s,
	}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Fire applies ev with the guards' facts and returns the transition taken.
// An event that does not apply returns an *EventError matching
// ErrNotDeclared or ErrGuardRejected and leaves the state unchanged.
func (m *Machine) Fire(ev Event, facts Facts) (Transition, error) {
	i, err := resolve(m.state, ev, facts)
	if err != nil {
		return Transition{}, err
	}
	t := Table[i]
	// context.Background: looplab wedges forever on a cancelled context
	// (docs/design.md §3: a cancelled context wedges its event forever), and this machine has no callbacks to cancel.
	if lerr := m.lf.Event(context.Background(), compiled.names[i]); lerr != nil {
		var noTrans lfsm.NoTransitionError
		if !t.Internal || !errors.As(lerr, &noTrans) {
			return Transition{}, fmt.Errorf("fsm: looplab disagrees with the declaration on %s/%s: %w", m.state, ev, lerr)
		}
		// A self-transition; looplab reports it as an error by design.
	}
	m.state = t.To
	return t, nil
}

// Resolve picks the row of (from, ev) whose guard holds for facts without
// firing anything: it is the pure decision the Machine applies.
func Resolve(from State, ev Event, facts Facts) (Transition, error) {
	i, err := resolve(from, ev, facts)
	if err != nil {
		return Transition{}, err
	}
	return Table[i], nil
}

// resolve is Resolve returning the row's index in Table.
func resolve(from State, ev Event, facts Facts) (int, error) {
	if int(from) >= len(States) || int(ev) >= len(Events) {
		return -1, &EventError{State: from, Event: ev, Facts: facts, Err: ErrNotDeclared}
	}
	idx := compiled.rows[int(from)*len(Events)+int(ev)]
	if len(idx) == 0 {
		return -1, &EventError{State: from, Event: ev, Facts: facts, Err: ErrNotDeclared}
	}
	found := -1
	for _, i := range idx {
		if Table[i].Guard.Holds(facts) {
			if found >= 0 {
				return -1, &EventError{State: from, Event: ev, Facts: facts, Err: ErrAmbiguous}
			}
			found = i
		}
	}
	if found < 0 {
		return -1, &EventError{State: from, Event: ev, Facts: facts, Err: ErrGuardRejected}
	}
	return found, nil
}

// Can reports whether ev is declared in the current state (regardless of guards).
func (m *Machine) Can(ev Event) bool {
	if int(m.state) >= len(States) || int(ev) >= len(Events) {
		return false
	}
	return len(compiled.rows[int(m.state)*len(Events)+int(ev)]) > 0
}
