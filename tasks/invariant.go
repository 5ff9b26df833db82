package tasks

// Invariant names one of the task invariants of docs/design.md §25.
type Invariant string

const (
	T1 Invariant = "T1" // a terminal state is never left; its result never changes
	T2 Invariant = "T2" // a call is sent at most once, twice only when replay-safe
	T3 Invariant = "T3" // completed holds a result the server gave; never a synthesized success
	T4 Invariant = "T4" // a task that ends without its call's answer has the call cancelled
	T5 Invariant = "T5" // a failed task's reason says whether the work may have taken effect
)

// Invariants lists them with their wording.
var Invariants = []struct {
	ID   Invariant
	Text string
}{
	{T1, "a terminal state (completed, failed, cancelled) is never left, and its result never changes"},
	{T2, "a task's call is sent at most once; at most twice when its tool is replay-safe (§21)"},
	{T3, "completed holds a result the server gave; mcpkeep never synthesizes a success"},
	{T4, "a task that ends before its call answered has the call's context cancelled (the server gets notifications/cancelled)"},
	{T5, "a failed task's reason says whether the work may have taken effect"},
}
