package tasks

import "github.com/mcpkeep/mcpkeep/internal/statechart"

// State is a task's status as the tasks extension names it
// (docs/design.md §25).
type State uint8

const (
	Working State = iota
	InputRequired
	Completed
	Failed
	Cancelled
)

// States lists every state in declaration order.
var States = []State{Working, InputRequired, Completed, Failed, Cancelled}

var stateNames = [...]string{
	Working:       "working",
	InputRequired: "input_required",
	Completed:     "completed",
	Failed:        "failed",
	Cancelled:     "cancelled",
}

// String returns the state exactly as the extension's status field spells it.
func (s State) String() string { return statechart.Name(stateNames[:], s, "state") }

// ParseState is the inverse of String.
func ParseState(name string) (State, bool) { return statechart.Parse[State](stateNames[:], name) }

// Terminal reports whether the task is finished: its result (or error)
// is fixed and kept until its TTL (invariant T1: nothing leaves it).
func (s State) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Initial is the state a task is created in.
const Initial = Working

var stateColors = map[State]string{
	Working:       "#2563eb", // blue: running
	InputRequired: "#d97706", // amber: waiting for the host
	Completed:     "#15803d", // green
	Failed:        "#dc2626", // red
	Cancelled:     "#4b5563", // grey
}

// Color is the state's colour on the diagram ("#rrggbb").
func (s State) Color() string {
	if c, ok := stateColors[s]; ok {
		return c
	}
	return "#64748b"
}
