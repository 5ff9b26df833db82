package mcpkeep

import (
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// Snapshot is a consistent view of a supervisor at one moment.
type Snapshot struct {
	Server      string
	State       fsm.State
	Gen         uint64
	Attempt     int // retries spent in the current outage
	MaxAttempts int
	NextRetry   time.Time // zero unless backing-off
	LastErr     error     // why the last generation failed or ended
	Tools       int       // tools registered by the last good generation
	Prompts     int       // prompts registered by the last good generation
	Resources   int       // resources listed by the last good generation
	Templates   int       // resource templates of the last good generation
	Started     bool
	// Cached: the lists registered come from the catalog cache; no live
	// generation confirmed them yet (docs/design.md §20).
	Cached bool
	// Starting: no generation of this Start was established yet and one
	// is connecting; a request waits for it (bounded by the connect
	// timeout) instead of failing.
	Starting bool
	// IdleStopping: the server is being stopped for idleness (lost, its
	// barrier pending); a request waits and starts the next generation.
	IdleStopping bool
	// Lazy: the server starts on demand (Options.Lazy).
	Lazy bool
	// IdleStop is the server's idle stop (zero: none). A server with one
	// may be stopped for idleness by hand (Supervisor.StopIdle).
	IdleStop time.Duration
	// InFlight is the number of the host's requests (calls, prompts,
	// reads, completions) in flight through the supervisor when State was
	// called, waiting ones included, and the relayed tasks its live
	// generation works on (Supervisor.HoldUse); read by State, never
	// published (a request is not a change of the snapshot).
	InFlight int
}

// Stats counts what the loop dropped: events of stale generations, second
// failure signals of one generation, and timers that fired after they
// stopped mattering. Tests read it to prove staleness is inert (I7).
type Stats struct {
	Dropped uint64
	// Rejected counts, per guard key (fsm.Guard.Key), the events a
	// declared guard refused: each is also counted in Dropped.
	Rejected map[string]uint64
	// Refused counts the listed items left out because a host could not
	// take them (docs/design.md §19), once per item and generation.
	Refused uint64
}
