package tools

import "strconv"

// A Sink is where a supervisor registers its server's tools; a host
// implements it (the proxy's upstream MCP server is one) or uses Set.
//
// A supervisor reserves its server name once at Start, replaces the whole
// tool set after every successful sync, removes it when it gives up, and
// releases the name when disposed. Implementations must be safe for
// concurrent use by many supervisors.
type Sink interface {
	// Reserve claims a server name. A name already reserved fails with
	// ErrReserved: two supervisors of one name must not share a tool set.
	Reserve(server string) error
	// Replace swaps in defs as the server's whole tool set, registered for
	// generation gen. It is atomic: on error nothing changed and the
	// previous registrations stay in place (docs/design.md §7, R20). The server must be
	// reserved (ErrNotReserved).
	Replace(server string, gen uint64, defs []Tool) error
	// Remove unregisters all tools of the server; it stays reserved.
	Remove(server string)
	// Release is Remove followed by dropping the reservation.
	Release(server string)
}

// ChangeKind says what a Change did.
type ChangeKind int

const (
	// Replaced: the server's tool set was swapped for Change.Tools.
	Replaced ChangeKind = iota + 1
	// Removed: all tools of the server were unregistered.
	Removed
)

func (k ChangeKind) String() string {
	switch k {
	case Replaced:
		return "replaced"
	case Removed:
		return "removed"
	}
	return "ChangeKind(" + strconv.Itoa(int(k)) + ")"
}

// A Change is one atomic swap of a server's tool set, as Set.Subscribe
// delivers it.
type Change struct {
	Server string
	Gen    uint64 // the generation of the registration after the change
	Kind   ChangeKind
	// Tools is the server's new set, sorted by public name; nil on Removed.
	// It is shared by all subscribers: read-only.
	Tools []Tool
}

// A Lookuper resolves a public name to the server that registered it and
// the tool's definition (with its original name). Set is one;
// mcpkeep.Pool.Call needs its Sink to be one.
type Lookuper interface {
	Lookup(public string) (server string, t Tool, ok bool)
}

var _ Lookuper = (*Set)(nil)

// A Quarantiner is a Sink that can hold a name for a holder that was
// disposed without proving its process gone (an incomplete shutdown):
// Quarantine unregisters the server's tools and keeps the name reserved,
// with Reserve failing with ErrQuarantined, until the holder's Release. A
// Sink without it keeps the name reserved all the same (Reserve fails
// with ErrReserved): the supervisor releases the name only once its last
// generation's close barrier completed, late close signals included.
type Quarantiner interface {
	Quarantine(server string)
}

var _ Quarantiner = (*Set)(nil)
