package fsm

// Invariant names one of docs/design.md §4's invariants. Transitions declare which
// ones they carry so the declaration, the diagrams and the tests speak of
// the same things.
type Invariant string

const (
	I1 Invariant = "I1" // at most one generation holds a live transport
	I2 Invariant = "I2" // registered tools belong to exactly one generation; no name twice
	I3 Invariant = "I3" // after exhausted-by-budget or stuck, and in disposed: no tools registered
	I4 Invariant = "I4" // 0 ≤ attempt ≤ maxAttempts
	I5 Invariant = "I5" // backing-off has exactly one retry timer armed; no other state has one
	I6 Invariant = "I6" // in disposed: no timer, no goroutine, no child process
	I7 Invariant = "I7" // a stale generation's event never changes state or registrations
)

// Invariants lists them with their wording.
var Invariants = []struct {
	ID   Invariant
	Text string
}{
	{I1, "at most one generation holds a live transport"},
	{I2, "registered tools belong to exactly one generation; no name is registered twice"},
	{I3, "after exhausted by budget or stuck, and in disposed, no tools of the server are registered"},
	{I4, "0 ≤ attempt ≤ maxAttempts"},
	{I5, "backing-off has exactly one retry timer armed; no other state has one"},
	{I6, "in disposed: no timer armed, no goroutine of the supervisor alive, no child process"},
	{I7, "a stale generation's event or notification never changes state or registrations"},
}
