package fsm

import "strconv"

// Event is an input to the lifecycle (docs/design.md §3).
type Event uint8

const (
	Connected Event = iota
	Failed
	ToolsChanged
	Dispose
	Closed
	Stable
	Reconnect
	Released
	Stuck
	RetryDue
	Drained
	DrainTimeout
	CatalogChanged
)

// Events lists every event in declaration order.
var Events = []Event{Connected, Failed, ToolsChanged, Dispose, Closed, Stable, Reconnect, Released, Stuck, RetryDue, Drained, DrainTimeout, CatalogChanged}

var eventNames = [...]string{
	Connected:      "connected",
	Failed:         "failed",
	ToolsChanged:   "tools_changed",
	Dispose:        "dispose",
	Closed:         "closed",
	Stable:         "stable",
	Reconnect:      "reconnect",
	Released:       "released",
	Stuck:          "stuck",
	RetryDue:       "retry_due",
	Drained:        "drained",
	DrainTimeout:   "drain_timeout",
	CatalogChanged: "catalog_changed",
}

// String returns the event's name exactly as docs/design.md §3 writes it.
func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// ParseEvent is the inverse of String.
func ParseEvent(name string) (Event, bool) {
	for i, n := range eventNames {
		if n == name {
			return Event(i), true
		}
	}
	return 0, false
}
