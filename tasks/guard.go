package tasks

// Facts are what the guards read. The zero value is the common case: a
// call answered with a tool result of a size the engine keeps.
type Facts struct {
	// RPCError: the call ended with a JSON-RPC error (or mcpkeep could not
	// send it), not with a tool result. A tool result with isError is
	// still a result: the extension keeps failed for JSON-RPC errors.
	RPCError bool
	// TooLarge: the tool result is larger than the engine keeps for a
	// task (Options.MaxResultBytes).
	TooLarge bool
	// Resending: on a loss, Call is sending the call once more on the
	// next generation: its tool is replay-safe and this is its first loss
	// (docs/design.md §21). Call decides; the engine hears it through
	// mcpkeep.WithReplayNotice. A loss Call returns is final.
	Resending bool
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
		Holds: func(f Facts) bool { return !f.RPCError && !f.TooLarge }}
	// Oversized: the call answered, but with more bytes than a task keeps.
	Oversized = Guard{Key: "oversized", Name: "tool result over the bytes kept",
		Holds: func(f Facts) bool { return !f.RPCError && f.TooLarge }}
	// RPCFailed: the call returned a JSON-RPC error.
	RPCFailed = Guard{Key: "rpc_error", Name: "JSON-RPC error",
		Holds: func(f Facts) bool { return f.RPCError }}
	// Replayable: Call sends the lost call once more on the next
	// generation (§21: replay-safe, first loss).
	Replayable = Guard{Key: "replayable", Name: "re-sent (replay-safe, first loss)",
		Holds: func(f Facts) bool { return f.Resending }}
	// OutcomeUnknown: the lost call may have taken effect and is not sent
	// again.
	OutcomeUnknown = Guard{Key: "outcome_unknown", Name: "not re-sent",
		Holds: func(f Facts) bool { return !f.Resending }}
)

// Guards lists every named guard (Always excluded).
var Guards = []Guard{Answered, Oversized, RPCFailed, Replayable, OutcomeUnknown}
