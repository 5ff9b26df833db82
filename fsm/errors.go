package fsm

import (
	"fmt"

	"github.com/mcpkeep/mcpkeep/internal/statechart"
)

var (
	// ErrNotDeclared: no row of the table has this (state, event).
	ErrNotDeclared = statechart.ErrNotDeclared
	// ErrGuardRejected: rows exist but none of their guards holds (for
	// example the event's generation is stale). The driver drops and counts.
	ErrGuardRejected = statechart.ErrGuardRejected
	// ErrAmbiguous: more than one guard holds; the declaration is broken.
	ErrAmbiguous = statechart.ErrAmbiguous
)

// EventError reports an event that does not apply. errors.Is matches one of
// the sentinel errors above.
type EventError struct {
	State State
	Event Event
	Facts Facts
	Err   error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("fsm: event %s in state %s: %v", e.Event, e.State, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }
