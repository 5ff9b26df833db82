// Package fsm declares the connection lifecycle of one supervised MCP server
// (docs/design.md §3) as data: states, events, named guards and the invariants each
// transition carries, in one table (Table) that the supervisor, the
// diagrams, the trace replayer and the tests all read.
//
// A Machine runs the table on top of github.com/looplab/fsm. Guarded rows
// that share a (state, event) are kept distinct for looplab by suffixing the
// guard's key to the event name; Fire resolves the guard first, so looplab
// only ever sees one candidate. Machines register no looplab callbacks, are
// owned by a single goroutine, and never pass a cancellable context to
// looplab (a cancelled context wedges it), so the known looplab pitfalls
// (re-entrant deadlock, nested-event ordering, wedging) cannot occur.
//
// Internal transitions (tools_changed, stable) keep the state; looplab
// reports a self-transition as NoTransitionError, which Fire treats as the
// success it is.
//
// DOT and Mermaid render the table; `make diagram` writes them to diagrams/.
package fsm
