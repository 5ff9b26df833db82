package fsm

import "strconv"

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
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ParseState is the inverse of String.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// Terminal reports whether nothing leaves s.
func (s State) Terminal() bool { return s == Disposed }
