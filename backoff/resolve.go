package backoff

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidPolicy is wrapped by every *FieldError, so callers can test for
// "this is a bad reconnect policy" without caring which field is at fault.
var ErrInvalidPolicy = errors.New("invalid reconnect policy")

// FieldError reports one bound or cross-field constraint that a Policy breaks.
// Field uses the JSON-style name ("initialDelay", "maxDelay", "maxAttempts",
// "jitter") so the message points at the config key the user must fix.
type FieldError struct {
	Field string // JSON-style field name
	Value any    // the offending value (time.Duration, int or float64)
	Rule  string // the rule broken, e.g. "must be > 0"
}

// Error renders e.g. `backoff: maxDelay 100ms: must be >= initialDelay (500ms)`.
func (e *FieldError) Error() string {
	return fmt.Sprintf("backoff: %s %v: %s", e.Field, e.Value, e.Rule)
}

// Unwrap returns ErrInvalidPolicy.
func (e *FieldError) Unwrap() error { return ErrInvalidPolicy }

// Resolve checks every bound and cross-field constraint of docs/design.md §5 and
// returns p unchanged when all hold:
//
//	initialDelay > 0
//	0 < maxDelay, initialDelay <= maxDelay <= 24h
//	1 <= maxAttempts <= 1e6
//	0 <= jitter <= 1 (NaN rejected)
//	stability 0 (derived), or maxDelay <= stability <= 24h
//
// Bounds are checked even when Enabled is false. The checks run in the order
// above and the first violation is returned as a *FieldError (wrapping
// ErrInvalidPolicy), with the zero Policy so a rejected value cannot be used
// by accident.
func (p Policy) Resolve() (Policy, error) {
	if err := p.check(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

func (p Policy) check() *FieldError {
	switch {
	case p.InitialDelay <= 0:
		return &FieldError{"initialDelay", p.InitialDelay, "must be > 0"}
	case p.MaxDelay <= 0:
		return &FieldError{"maxDelay", p.MaxDelay, "must be > 0"}
	case p.MaxDelay < p.InitialDelay:
		return &FieldError{"maxDelay", p.MaxDelay, fmt.Sprintf("must be >= initialDelay (%v)", p.InitialDelay)}
	case p.MaxDelay > MaxMaxDelay:
		return &FieldError{"maxDelay", p.MaxDelay, fmt.Sprintf("must be <= %v", MaxMaxDelay)}
	case p.MaxAttempts < 1:
		return &FieldError{"maxAttempts", p.MaxAttempts, "must be >= 1"}
	case p.MaxAttempts > MaxMaxAttempts:
		return &FieldError{"maxAttempts", p.MaxAttempts, fmt.Sprintf("must be <= %d", MaxMaxAttempts)}
	case math.IsNaN(p.Jitter):
		// NaN compares false with everything, so it must be caught before
		// the range checks or it would slip through both of them.
		return &FieldError{"jitter", p.Jitter, "must be a number in [0, 1]"}
	case p.Jitter < 0:
		return &FieldError{"jitter", p.Jitter, "must be >= 0"}
	case p.Jitter > 1:
		return &FieldError{"jitter", p.Jitter, "must be <= 1"}
	case p.Stability < 0:
		return &FieldError{"stabilityWindow", p.Stability, "must be > 0 (omit it for the default)"}
	case p.Stability > 0 && p.Stability < p.MaxDelay:
		// Shorter than the longest wait, an outage could end before the
		// server had stayed up as long as the policy ever waits for it.
		return &FieldError{"stabilityWindow", p.Stability, fmt.Sprintf("must be >= maxDelay (%v)", p.MaxDelay)}
	case p.Stability > MaxMaxDelay:
		return &FieldError{"stabilityWindow", p.Stability, fmt.Sprintf("must be <= %v", MaxMaxDelay)}
	}
	return nil
}
