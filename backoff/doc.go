// Package backoff holds a server's reconnect policy and the arithmetic the
// mcpkeep supervisor runs on it (docs/design.md §5): validation, the retry schedule,
// jitter, and the per-outage retry budget. It is pure: no goroutines, no
// clock, no randomness of its own. The supervisor owns time and passes in
// the uniform draw, so tests replay every schedule exactly.
//
// # The schedule
//
// The wait before retry n of an outage (n = 1, 2, …) is
//
//	d(n) = min(initialDelay · 2^(n−1), maxDelay)
//
// The product is never formed when it could overflow: Delay compares
// initialDelay with maxDelay>>(n−1) instead, which is exact, so d(n) is
// right for every n up to math.MaxInt in constant time. With the defaults
// (500ms, 30s, 10 retries) the waits are 0.5, 1, 2, 4, 8, 16, 30, 30, 30,
// 30 s, 151.5 s in all: about two and a half minutes, then give up.
//
// # Jitter
//
// With jitter j the supervisor sleeps d(n)·(1 − j·U), U uniform in [0,1)
// from an injected Rand. The cap is applied first and jitter only shortens
// the wait, so a jittered wait never exceeds d(n) ≤ maxDelay: the cap is a
// promise to the user ("never more than 30 s between tries") that jitter
// must not break, as it would with the symmetric d·(1 ± j) form. Stdio
// servers default to j = 0 (one local process, nobody to desynchronize
// from); HTTP servers to j = 0.5, because every client of a remote server
// loses it at the same moment and would otherwise redial in lockstep.
//
// # Budget and stability window
//
// An outage may spend maxAttempts retries (Budget). A retry whose
// connection is lost again before the stability window passes still counts
// as spent; when the last one fails the supervisor gives up (exhausted).
//
// The stability window is maxDelay, derived rather than configured. A
// connection that stays established that long resets the budget. This is
// the idea behind Kubernetes' CrashLoopBackOff, whose restart backoff
// (capped at 5 minutes) is reset once a container has run for 10 minutes;
// mcpkeep ties the window to the cap so one knob scales both. A server that
// crashes now and then therefore recovers forever, while a crash loop whose
// connects briefly succeed (handshake fine, dead a second later) cannot
// launder its budget: resetting on every successful connect would let it
// restart forever, every initialDelay, never backing off. Requiring a full
// maxDelay of uptime means the server has stayed up at least as long as the
// longest wait the policy would ever impose.
//
// # Validation
//
// Resolve checks every bound, also for policies built in Go rather than
// decoded from JSON, and also when reconnect is disabled: initialDelay > 0,
// initialDelay ≤ maxDelay ≤ 24h, 1 ≤ maxAttempts ≤ 10^6, 0 ≤ jitter ≤ 1.
// A violation is a *FieldError naming the field (by its JSON-style name),
// the value and the rule, and wrapping ErrInvalidPolicy. The upper bounds
// keep a give-up reachable and all arithmetic here far from overflow; the
// functions still stay safe (never negative, never wrapping) on a policy
// that was never resolved.
//
// See Example for the default schedule and Example_resolveError for the
// error a bad policy yields.
package backoff
