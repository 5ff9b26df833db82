package fsm

import "github.com/mcpkeep/mcpkeep/internal/statechart"

// State is a lifecycle state of one supervised server (docs/design.md §3).
type State uint8

const (
	Connecting State = iota
	Established
	Lost
	BackingOff
	Exhausted
	Draining
	Disposed
	// Idle: no process, the catalog kept (docs/design.md §20). Appended
	// last so the numbering of the others (traces, metrics) is unchanged.
	Idle
)

// States lists every state in declaration order.
var States = []State{Connecting, Established, Lost, BackingOff, Exhausted, Draining, Disposed, Idle}

var stateNames = [...]string{
	Connecting:  "connecting",
	Established: "established",
	Lost:        "lost",
	BackingOff:  "backing-off",
	Exhausted:   "exhausted",
	Draining:    "draining",
	Disposed:    "disposed",
	Idle:        "idle",
}

// String returns the state's name exactly as docs/design.md §3 writes it.
func (s State) String() string { return statechart.Name(stateNames[:], s, "state") }

// ParseState is the inverse of String.
func ParseState(name string) (State, bool) { return statechart.Parse[State](stateNames[:], name) }

// Terminal reports whether nothing leaves s.
func (s State) Terminal() bool { return s == Disposed }
