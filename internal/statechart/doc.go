// Package statechart renders a declared state table as Graphviz DOT and as a
// Mermaid stateDiagram-v2. It knows nothing of guards, events or invariants:
// fsm (the lifecycle, docs/design.md §7) and tasks (the task table, §25) each
// describe their table as a Chart, edge labels already written, and keep
// their exported DOT and Mermaid functions; this package is the one place
// the diagram syntax lives.
package statechart
