package tasks

// Facts are what the guards read. The zero value is the common case: a
// call answered with a tool result, not replay-safe, never re-sent.
type Facts struct {
	// RPCError: the call ended with a JSON-RPC error (or mcpkeep could not
	// send it), not with a tool result. A tool result with isError is
	// still a result: the extension keeps failed for JSON-RPC errors.
	RPCError bool
	// ReplaySafe: the call's tool declares readOnlyHint or idempotentHint
	// and its server allows replay (docs/design.md §21).
	ReplaySafe bool
	// Resent: the call was already sent once more after a loss; a second
	// loss is final.
	Resent bool
}

// Guard is a named predicate declared with a row. Key is stable (code,
// counters); Name is what the diagram prints.
type Guard struct {
	Key   string
	Name  string
	Holds func(Facts) bool
}

// Always is the absent guard.
var Always = Guard{Holds: func(Facts) bool { return true }}

var (
	// Answered: the call returned a tool result (isError or not).
	Answered = Guard{Key: "answered", Name: "tool result",
		Holds: func(f Facts) bool { return !f.RPCError }}
	// RPCFailed: the call returned a JSON-RPC error.
	RPCFailed = Guard{Key: "rpc_error", Name: "JSON-RPC error",
		Holds: func(f Facts) bool { return f.RPCError }}
	// Replayable: the lost call may be sent once more on the next
	// generation (§21), and has not been yet.
	Replayable = Guard{Key: "replayable", Name: "replay-safe ∧ not yet re-sent",
		Holds: func(f Facts) bool { return f.ReplaySafe && !f.Resent }}
	// OutcomeUnknown: the lost call may have taken effect and must not be
	// sent again.
	OutcomeUnknown = Guard{Key: "outcome_unknown", Name: "not replay-safe ∨ already re-sent",
		Holds: func(f Facts) bool { return !f.ReplaySafe || f.Resent }}
)

// Guards lists every named guard (Always excluded).
var Guards = []Guard{Answered, RPCFailed, Replayable, OutcomeUnknown}
