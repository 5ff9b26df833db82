package statechart

import "errors"

// The outcomes of resolving an event against a declared table, shared by
// the lifecycle (fsm.Table) and the task table (tasks.Table): each
// package names them too, so callers test either with errors.Is.
var (
	// ErrNotDeclared: no row of the table has this (state, event).
	ErrNotDeclared = errors.New("event not declared in this state")
	// ErrGuardRejected: rows exist but none of their guards holds.
	ErrGuardRejected = errors.New("no guard holds")
	// ErrAmbiguous: more than one guard holds; the declaration is broken.
	ErrAmbiguous = errors.New("more than one guard holds")
)
