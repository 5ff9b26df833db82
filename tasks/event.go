package tasks

import "github.com/mcpkeep/mcpkeep/internal/statechart"

// Event is an input to a task (docs/design.md §25).
type Event uint8

const (
	// Returned: the task's call returned (a result or a JSON-RPC error).
	Returned Event = iota
	// Lost: the call's server connection ended while the call was sent
	// and unanswered (mcpkeep.ErrConnectionLost).
	Lost
	// InputRequested: the server asked the host something inside the
	// call (the bridge of §24).
	InputRequested
	// InputAnswered: the host answered every open input request
	// (tasks/update).
	InputAnswered
	// Cancel: the host sent tasks/cancel.
	Cancel
	// Expired: the task's TTL passed.
	Expired
	// Dispose: the engine is shutting down.
	Dispose
)

// Events lists every event in declaration order.
var Events = []Event{Returned, Lost, InputRequested, InputAnswered, Cancel, Expired, Dispose}

var eventNames = [...]string{
	Returned:       "returned",
	Lost:           "lost",
	InputRequested: "input_requested",
	InputAnswered:  "input_answered",
	Cancel:         "cancel",
	Expired:        "expired",
	Dispose:        "dispose",
}

// String returns the event's name.
func (e Event) String() string { return statechart.Name(eventNames[:], e, "event") }

// ParseEvent is the inverse of String.
func ParseEvent(name string) (Event, bool) { return statechart.Parse[Event](eventNames[:], name) }
