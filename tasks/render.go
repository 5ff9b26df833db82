package tasks

import "github.com/mcpkeep/mcpkeep/internal/statechart"

// DOT renders the task table (docs/design.md §25) as Graphviz DOT: guards on edge labels,
// internal transitions as self-loops, the terminal state doubly circled and
// an arrow from the initial point. The output depends only on Table, so it
// is byte-for-byte deterministic.
func DOT() string { return statechart.DOT(chart()) }

// Mermaid renders the declaration as a Mermaid stateDiagram-v2.
func Mermaid() string { return statechart.Mermaid(chart()) }

// chart describes States and Table to the renderer shared with the
// lifecycle (docs/design.md §25); each state in its colour (State.Color).
func chart() statechart.Chart {
	return statechart.Build("Code generated from tasks.Table by `make diagram`; DO NOT EDIT.",
		"tasks", States, Initial, Table, edge)
}

// edge draws a row, labelled "event [guard]" plus the invariants it carries.
func edge(t Transition) statechart.Transition {
	label := statechart.EdgeLabel(t.Event.String(), t.Guard.Name, t.Internal, t.Carries)
	return statechart.Transition{From: t.From.String(), To: t.To.String(), Label: label, Internal: t.Internal}
}
