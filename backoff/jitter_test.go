package backoff_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// lowerBound is the documented floor Delay(n) − ⌊Delay(n)·j⌋, computed the
// way the package promises it (float64, truncated toward zero).
func lowerBound(d time.Duration, j float64) time.Duration {
	return d - time.Duration(float64(d)*j)
}

// With a seeded source every jittered wait lies in [d·(1−j), d], j = 0 is
// exact, and jitter > 0 really spreads the waits.
func TestJitterSeeded(t *testing.T) {
	var r backoff.Rand = rand.New(rand.NewPCG(1, 2)) // *rand.Rand satisfies Rand
	for _, j := range []float64{0, 0.1, 0.5, 0.9, 1} {
		p := backoff.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 20, Jitter: j}
		if _, err := p.Resolve(); err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= p.MaxAttempts; n++ {
			d := p.Delay(n)
			lo := lowerBound(d, j)
			spread := false
			for range 500 {
				got := p.JitteredDelay(n, r.Float64())
				if got > d || got < lo {
					t.Fatalf("j=%v n=%d: JitteredDelay = %v, want in [%v, %v]", j, n, got, lo, d)
				}
				if j == 0 && got != d {
					t.Fatalf("j=0 n=%d: JitteredDelay = %v, want exactly %v", n, got, d)
				}
				// Half the jitter range is a wide target: 500 uniform
				// draws all missing it has probability 2^-500.
				if got < d-time.Duration(float64(d)*j/2) {
					spread = true
				}
			}
			if j > 0 && !spread {
				t.Errorf("j=%v n=%d: 500 draws never went below d·(1−j/2): jitter not applied", j, n)
			}
		}
	}
}

func TestJitterEdges(t *testing.T) {
	almostOne := math.Nextafter(1, 0)
	half := backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.5}
	full := backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: 1}
	tests := []struct {
		name   string
		p      backoff.Policy
		n      int
		u      float64
		lo, hi time.Duration
	}{
		{"u=0 is Delay", half, 1, 0, time.Second, time.Second},
		{"u=0.5, j=0.5", half, 1, 0.5, 750 * time.Millisecond, 750 * time.Millisecond},
		{"u→1, j=0.5 reaches d/2 within 1ns", half, 1, almostOne, 500 * time.Millisecond, 500*time.Millisecond + 1},
		{"u=1 clamped below 1", half, 1, 1, 500 * time.Millisecond, 500*time.Millisecond + 1},
		{"u=+Inf clamped below 1", half, 1, math.Inf(1), 500 * time.Millisecond, 500*time.Millisecond + 1},
		{"u negative clamped to 0", half, 1, -0.5, time.Second, time.Second},
		{"u NaN clamped to 0", half, 1, math.NaN(), time.Second, time.Second},
		{"u→1, j=1 reaches 0 within 1ns", full, 1, almostOne, 0, 1},
		{"u=0.25, j=1", full, 1, 0.25, 750 * time.Millisecond, 750 * time.Millisecond},
		// Unresolved jitter is clamped into [0,1] too.
		{"unresolved j NaN acts as 0", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: math.NaN()}, 1, 0.5, time.Second, time.Second},
		{"unresolved j<0 acts as 0", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: -3}, 1, 0.5, time.Second, time.Second},
		{"unresolved j>1 acts as 1", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: 7}, 1, 0.25, 750 * time.Millisecond, 750 * time.Millisecond},
		{"unresolved j=+Inf acts as 1", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, Jitter: math.Inf(1)}, 1, almostOne, 0, 1},
		// An unresolved int64-sized cap must not push the float→int
		// conversion out of range.
		{"unresolved huge d, j=1, u→1", backoff.Policy{InitialDelay: 1, MaxDelay: math.MaxInt64, Jitter: 1}, 100, almostOne, 0, 1 << 11},
		{"unresolved huge d, j=0.5, u=0.5", backoff.Policy{InitialDelay: math.MaxInt64, MaxDelay: math.MaxInt64, Jitter: 0.5}, 100, 0.5, math.MaxInt64 / 4 * 3, math.MaxInt64},
		{"unresolved zero delay stays 0", backoff.Policy{InitialDelay: 0, MaxDelay: time.Minute, Jitter: 0.5}, 1, 0.5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.JitteredDelay(tt.n, tt.u)
			if got < tt.lo || got > tt.hi {
				t.Errorf("JitteredDelay(%d, u=%v) = %v (%d ns), want in [%d, %d] ns", tt.n, tt.u, got, got, tt.lo, tt.hi)
			}
		})
	}
}
