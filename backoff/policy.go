package backoff

import "time"

// Policy is a server's reconnect policy (docs/design.md §5). A Policy built in Go or
// decoded from JSON is not trusted until Resolve has accepted it; Delay,
// Schedule and Budget stay safe (never negative, never overflowing) on an
// unresolved Policy, but only a resolved one gets the documented schedule.
type Policy struct {
	// Enabled false means a lost server is not retried at all (manual
	// recovery). Its bounds are still checked: a typo must not hide until
	// someone flips the switch.
	Enabled bool
	// InitialDelay is the wait before retry 1 of an outage.
	InitialDelay time.Duration
	// MaxDelay caps every wait.
	MaxDelay time.Duration
	// MaxAttempts is the number of retries an outage may spend.
	MaxAttempts int
	// Jitter j in [0,1] shortens each wait by up to the fraction j.
	Jitter float64
	// Stability is how long a connection must stay established for its
	// outage to count as over (see StabilityWindow). Zero derives it:
	// MaxDelay, but never less than MinStability. Set, it must be at
	// least MaxDelay.
	Stability time.Duration
}

// Upper bounds enforced by Resolve. They keep a give-up reachable in human
// time and keep every product in this package far from int64 overflow.
const (
	MaxMaxDelay    = 24 * time.Hour
	MaxMaxAttempts = 1_000_000
)

// MinStability is the floor of a derived stability window. A window of
// maxDelay alone let a policy with a short cap (maxDelay 1 s) restart a
// server that dies 1.5 s after every connect forever, each restart at
// attempt 1: the budget never ran out. With the floor such a loop
// restarts at most about twice a minute before it counts, whatever the
// cap (docs/design.md §5).
const MinStability = 30 * time.Second

// Default is the stdio policy: 500ms doubling to 30s, 10 retries (about 2.5
// minutes, then give up), no jitter. A local child process has no thundering
// herd to spread out, so jitter would only make restarts slower and logs
// harder to read.
func Default() Policy {
	return Policy{
		Enabled:      true,
		InitialDelay: 500 * time.Millisecond,
		MaxDelay:     30 * time.Second,
		MaxAttempts:  10,
		Jitter:       0,
	}
}

// DefaultHTTP is Default with jitter 0.5: many clients of one remote server
// lose it at the same instant, and jitter keeps them from redialing in lockstep.
func DefaultHTTP() Policy {
	p := Default()
	p.Jitter = 0.5
	return p
}

// StabilityWindow is how long a connection must stay established before the
// outage counts as over and the budget resets: Stability when set, else
// MaxDelay floored at MinStability; see the package doc for why.
func (p Policy) StabilityWindow() time.Duration {
	if p.Stability > 0 {
		return p.Stability
	}
	return max(p.MaxDelay, MinStability)
}
