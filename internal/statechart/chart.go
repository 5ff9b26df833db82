package statechart

// Chart is what a diagram shows of a state table. Its order is the output's
// order, so a Chart built from a declaration renders byte-for-byte the same
// each time (the committed diagrams are compared exactly, docs/design.md §7).
type Chart struct {
	// Header is the generated-code line without its comment marker: DOT
	// prefixes "// ", Mermaid "%% ".
	Header string
	// Name is the DOT graph's name.
	Name string
	// States in declaration order.
	States []State
	// Initial is the Name of the state the initial arrow enters.
	Initial string
	// Transitions in declaration order.
	Transitions []Transition
}

// State is one node: its name, its colour (a "#rrggbb" the live page lights
// it in too, §28) and whether it is terminal (doubly circled, an arrow out to
// Mermaid's final pseudo-state).
type State struct {
	Name     string
	Color    string
	Terminal bool
}

// Transition is one table row: an internal row is drawn dashed.
type Transition struct {
	From, To string
	Label    string
	Internal bool
}
