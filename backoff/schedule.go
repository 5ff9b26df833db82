package backoff

import (
	"math"
	"time"
)

// Schedule returns the unjittered waits Delay(1), …, Delay(MaxAttempts): the
// whole retry plan of one outage, as `mcpkeep check` prints it.
//
// An unresolved MaxAttempts below 1 gives nil; one above MaxMaxAttempts is
// clamped to it so that a bad policy cannot allocate without bound.
func (p Policy) Schedule() []time.Duration {
	n := min(p.MaxAttempts, MaxMaxAttempts)
	if n < 1 {
		return nil
	}
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = p.Delay(i + 1)
	}
	return s
}

// Total is the sum of Schedule(): the longest an outage waits (without
// connect time) before the supervisor gives up. It saturates at the largest
// Duration instead of wrapping negative; 1e6 retries of 24h do not fit in
// 292 years of nanoseconds.
//
// It runs in O(log) time, not O(MaxAttempts): the doubling phase lasts at
// most 63 steps and every later retry waits exactly MaxDelay.
func (p Policy) Total() time.Duration {
	if p.MaxAttempts < 1 || p.InitialDelay <= 0 || p.MaxDelay <= 0 {
		return 0 // every Delay is 0 (or there are no retries)
	}
	var sum time.Duration
	n := 1
	for ; n <= p.MaxAttempts; n++ {
		d := p.Delay(n)
		if d >= p.MaxDelay {
			break
		}
		// The doubling phase sums to less than 2·MaxDelay: no overflow
		// when resolved (MaxDelay <= 24h), but an unresolved MaxDelay near
		// the int64 limit could wrap, so saturate here as well.
		if sum > math.MaxInt64-d {
			return math.MaxInt64
		}
		sum += d
	}
	capped := int64(p.MaxAttempts - n + 1) // retries that wait MaxDelay
	if capped <= 0 || p.MaxDelay <= 0 {
		return sum
	}
	if capped > (math.MaxInt64-int64(sum))/int64(p.MaxDelay) {
		return math.MaxInt64
	}
	return sum + time.Duration(capped)*p.MaxDelay
}
