package backoff_test

import (
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
)

var sink time.Duration

// Delay is O(1) for any n; the range covers the doubling phase, the cap and
// n far past 63 bits.
func BenchmarkDelay(b *testing.B) {
	p := backoff.Policy{Enabled: true, InitialDelay: time.Nanosecond, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: backoff.MaxMaxAttempts}
	ns := []int{1, 10, 47, 48, 63, 64, 1_000_000, 1 << 62}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sink = p.Delay(ns[i%len(ns)])
		i++
	}
}

// Total of the largest valid budget stays cheap: it never iterates 1e6 times.
func BenchmarkTotal(b *testing.B) {
	p := backoff.Policy{Enabled: true, InitialDelay: time.Nanosecond, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: backoff.MaxMaxAttempts}
	b.ReportAllocs()
	for b.Loop() {
		sink = p.Total()
	}
}
