package statechart

// Node is what a declared state type offers the renderer: fsm.State and
// tasks.State both have these methods.
type Node interface {
	String() string
	Color() string
	Terminal() bool
}

// Build describes a declaration as a Chart: its states in order, its initial
// state, and each table row as row gives it, so each package keeps its own
// edge labels (docs/design.md §7, §25).
func Build[S Node, R any](header, name string, states []S, initial S, rows []R, row func(R) Transition) Chart {
	c := Chart{Header: header, Name: name, Initial: initial.String()}
	for _, s := range states {
		c.States = append(c.States, State{Name: s.String(), Color: s.Color(), Terminal: s.Terminal()})
	}
	for _, r := range rows {
		c.Transitions = append(c.Transitions, row(r))
	}
	return c
}
