package fsm

import "github.com/mcpkeep/mcpkeep/internal/statechart"

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
	// Demand: a request needs an idle server (docs/design.md §20).
	Demand
	// IdleTimeout: an established server's idle timer fired.
	IdleTimeout
)

// Events lists every event in declaration order.
var Events = []Event{Connected, Failed, ToolsChanged, Dispose, Closed, Stable, Reconnect, Released, Stuck, RetryDue, Drained, DrainTimeout, CatalogChanged, Demand, IdleTimeout}

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
	Demand:         "demand",
	IdleTimeout:    "idle_timeout",
}

// String returns the event's name exactly as docs/design.md §3 writes it.
func (e Event) String() string { return statechart.Name(eventNames[:], e, "event") }

// ParseEvent is the inverse of String.
func ParseEvent(name string) (Event, bool) { return statechart.Parse[Event](eventNames[:], name) }
