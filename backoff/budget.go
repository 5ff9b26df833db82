package backoff

// Budget counts the retries spent in the current outage (invariant I4:
// 0 <= Attempt() <= Max()). It is not safe for concurrent use: the
// supervisor goroutine that owns the FSM owns its Budget too, so a mutex
// would only hide a design mistake.
//
// Budget ignores Policy.Enabled: "reconnect disabled" is its own guard in
// the lifecycle, distinct from "budget spent".
type Budget struct {
	attempt int // retries spent in this outage, 0..max
	max     int // MaxAttempts at creation, never negative
}

// NewBudget returns an unspent budget of p.MaxAttempts retries. A negative
// MaxAttempts from an unresolved policy is taken as 0 so I4 still holds.
func NewBudget(p Policy) *Budget {
	return &Budget{max: max(p.MaxAttempts, 0)}
}

// Next spends one retry. While budget is left it returns the 1-based number
// of the retry now spent (1 for the first retry after the first failure) and
// ok=true. Once all Max() retries are spent it changes nothing and returns
// Attempt() (== Max()) with ok=false, which is what `gave up` logs.
func (b *Budget) Next() (attempt int, ok bool) {
	if b.attempt >= b.max {
		return b.attempt, false
	}
	b.attempt++
	return b.attempt, true
}

// Attempt is the number of retries spent so far in this outage.
func (b *Budget) Attempt() int { return b.attempt }

// Left reports whether another retry may be spent (Attempt() < Max()).
func (b *Budget) Left() bool { return b.attempt < b.max }

// Reset gives the budget back: called when a connection has stayed up for
// the stability window, or on a manual reconnect.
func (b *Budget) Reset() { b.attempt = 0 }

// Max is the number of retries an outage may spend.
func (b *Budget) Max() int { return b.max }
