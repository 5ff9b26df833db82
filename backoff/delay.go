package backoff

import (
	"math"
	"time"
)

// Rand is the injectable random source for jitter. A *rand.Rand from
// math/rand/v2 satisfies it; tests pass a seeded one so schedules replay.
type Rand interface {
	Float64() float64
}

// Delay returns the wait before retry n of an outage:
//
//	d(n) = min(InitialDelay · 2^(n−1), MaxDelay)
//
// n < 1 is treated as 1. The product is never formed when it could overflow:
// InitialDelay·2^s <= MaxDelay exactly when InitialDelay <= MaxDelay>>s, so
// the comparison is made on the shifted cap instead. Any n, up to
// math.MaxInt, is therefore safe and O(1).
//
// On an unresolved policy with InitialDelay or MaxDelay <= 0 the result is 0
// rather than a negative wait.
func (p Policy) Delay(n int) time.Duration {
	if p.InitialDelay <= 0 || p.MaxDelay <= 0 {
		return 0
	}
	if n < 1 {
		n = 1
	}
	shift := uint(n - 1)
	// InitialDelay·2^shift <= MaxDelay  ⇔  InitialDelay <= MaxDelay>>shift
	// (floor division by 2^shift loses nothing an integer InitialDelay can
	// land on). Go defines shifts past the width: for shift >= 63 the
	// right-hand side is 0 and the cap wins, as it must.
	if p.InitialDelay > p.MaxDelay>>shift {
		return p.MaxDelay
	}
	return p.InitialDelay << shift
}

// JitteredDelay returns Delay(n)·(1 − Jitter·u), the wait actually slept,
// for u drawn uniformly from [0,1) (typically Rand.Float64()).
//
// The cap is applied before jitter, and jitter only ever shortens the wait,
// so the result never exceeds Delay(n) <= MaxDelay and is never negative.
// It is computed as Delay(n) minus a reduction truncated toward zero, so it
// is never below Delay(n) − ⌊Delay(n)·Jitter⌋ either.
//
// u outside [0,1) (or NaN) is clamped into it, and so is an unresolved Jitter
// outside [0,1], so a bad random source cannot produce a bad wait.
func (p Policy) JitteredDelay(n int, u float64) time.Duration {
	d := p.Delay(n)
	u = clamp01(u)
	if u >= 1 {
		u = math.Nextafter(1, 0)
	}
	// Multiply in this order: fl(fl(d·j)·u) <= fl(d·j) because u < 1 and
	// rounding is monotone, which is what makes the lower bound exact. All
	// factors are >= 0, and the product is < 2^63 even for the largest
	// Duration (fl(d) <= 2^63, j <= 1, u < 1), so the conversion is in range.
	cut := time.Duration(float64(d) * clamp01(p.Jitter) * u)
	// fl(d) can round above d once d exceeds 2^53 ns (~104 days, only on
	// an unresolved policy). The product still truncates to <= d (u < 1
	// pulls it below fl(d)); the min makes that a property of the code, not
	// of a rounding argument.
	return d - min(cut, d)
}

// clamp01 maps NaN and negatives to 0 and values above 1 to 1.
func clamp01(x float64) float64 {
	switch {
	case !(x > 0): // also catches NaN
		return 0
	case x > 1:
		return 1
	}
	return x
}
