package fsm

// stateColors are the states' colours on every coloured rendering: the
// SVG diagram's nodes (DOT fillcolor) and the live page's badges and lit
// states (docs/design.md §28), so the diagram is the page's legend.
var stateColors = map[State]string{
	Connecting:  "#2563eb", // blue: on its way
	Established: "#15803d", // green: serving
	Lost:        "#d97706", // amber: a generation just ended
	BackingOff:  "#ea580c", // orange: waiting to retry
	Exhausted:   "#dc2626", // red: gave up, needs a hand
	Draining:    "#7c3aed", // violet: shutting down
	Disposed:    "#4b5563", // grey: gone
	Idle:        "#0d9488", // teal: at rest, catalog kept
}

// neutralColor is the colour of a state declared without one.
const neutralColor = "#64748b"

// Color is the state's colour as "#rrggbb" (docs/design.md §28). A state
// added to States without a colour here renders in a neutral grey.
func (s State) Color() string {
	if c, ok := stateColors[s]; ok {
		return c
	}
	return neutralColor
}
