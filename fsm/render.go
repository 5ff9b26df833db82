package fsm

import "github.com/mcpkeep/mcpkeep/internal/statechart"

// DOT renders the declaration as Graphviz DOT: guards on edge labels,
// internal transitions as self-loops, the terminal state doubly circled and
// an arrow from the initial point. The output depends only on Table, so it
// is byte-for-byte deterministic.
func DOT() string { return statechart.DOT(chart()) }

// Mermaid renders the declaration as a Mermaid stateDiagram-v2.
func Mermaid() string { return statechart.Mermaid(chart()) }

// chart describes States and Table to the renderer shared with the task
// table (docs/design.md §7); each state in its colour (State.Color), as the
// live page lights it (§28).
func chart() statechart.Chart {
	return statechart.Build("Code generated from fsm.Table by `mcpkeep diagram`; DO NOT EDIT.",
		"lifecycle", States, Initial, Table, edge)
}

// edge draws a row, labelled "event [guard]" plus the invariants it carries.
func edge(t Transition) statechart.Transition {
	label := statechart.EdgeLabel(t.Event.String(), t.Guard.Name, t.Internal, t.Carries)
	return statechart.Transition{From: t.From.String(), To: t.To.String(), Label: label, Internal: t.Internal}
}
