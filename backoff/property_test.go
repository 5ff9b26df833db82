package backoff_test

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// validPolicy draws any policy Resolve must accept, covering the full
// ranges of every field including their edges.
func validPolicy(t *rapid.T, maxAttempts int) backoff.Policy {
	initial := time.Duration(rapid.Int64Range(1, int64(backoff.MaxMaxDelay)).Draw(t, "initialDelay"))
	p := backoff.Policy{
		Enabled:      rapid.Bool().Draw(t, "enabled"),
		InitialDelay: initial,
		MaxDelay:     time.Duration(rapid.Int64Range(int64(initial), int64(backoff.MaxMaxDelay)).Draw(t, "maxDelay")),
		MaxAttempts:  rapid.IntRange(1, maxAttempts).Draw(t, "maxAttempts"),
		Jitter:       rapid.Float64Range(0, 1).Draw(t, "jitter"),
	}
	if _, err := p.Resolve(); err != nil {
		t.Fatalf("generator drew an invalid policy: %v", err)
	}
	return p
}

func TestPropertyDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t, backoff.MaxMaxAttempts)
		// n+1 must not wrap, hence MaxInt-1 as the top of every range.
		n := rapid.OneOf(rapid.IntRange(-2, 80), rapid.IntRange(math.MaxInt-2, math.MaxInt-1), rapid.IntRange(math.MinInt, math.MaxInt-1)).Draw(t, "n")
		u := rapid.Float64Range(0, 1).Filter(func(u float64) bool { return u < 1 }).Draw(t, "u")

		d, next := p.Delay(n), p.Delay(n+1)
		if d <= 0 || d > p.MaxDelay {
			t.Fatalf("Delay(%d) = %v, want in (0, %v]", n, d, p.MaxDelay)
		}
		if next < d {
			t.Fatalf("Delay(%d) = %v > Delay(%d) = %v: not monotone", n, d, n+1, next)
		}
		// Growth is at most a doubling per retry.
		if next-d > d {
			t.Fatalf("Delay(%d) = %v more than doubles Delay(%d) = %v", n+1, next, n, d)
		}
		if n <= 1 && d != p.InitialDelay {
			t.Fatalf("Delay(%d) = %v, want initialDelay %v", n, d, p.InitialDelay)
		}
		got := p.JitteredDelay(n, u)
		if lo := lowerBound(d, p.Jitter); got < lo || got > d {
			t.Fatalf("JitteredDelay(%d, %v) = %v, want in [%v, %v]", n, u, got, lo, d)
		}
	})
}

// Total is the saturating sum of Schedule, computed without the loop.
func TestPropertyTotalIsSumOfSchedule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t, 300)
		var sum time.Duration
		for _, d := range p.Schedule() {
			if sum > math.MaxInt64-d {
				sum = math.MaxInt64
				break
			}
			sum += d
		}
		if got := p.Total(); got != sum {
			t.Fatalf("Total() = %v, sum of Schedule() = %v", got, sum)
		}
	})
}

// A random run of failures and resets against a plain counter model: the
// budget never leaves [0, Max] (I4) and Next/Left agree with the model.
func TestPropertyBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t, 20)
		b := backoff.NewBudget(p)
		spent := 0
		for i, op := range rapid.SliceOf(rapid.IntRange(0, 5)).Draw(t, "ops") {
			if op == 0 {
				b.Reset()
				spent = 0
			} else {
				k, ok := b.Next()
				if wantOK := spent < p.MaxAttempts; ok != wantOK {
					t.Fatalf("op %d: Next ok = %v, want %v (spent %d of %d)", i, ok, wantOK, spent, p.MaxAttempts)
				}
				if ok {
					spent++
				}
				if k != spent {
					t.Fatalf("op %d: Next attempt = %d, want %d", i, k, spent)
				}
			}
			if a := b.Attempt(); a != spent || a < 0 || a > b.Max() {
				t.Fatalf("op %d: Attempt() = %d, want %d within [0, %d]", i, a, spent, b.Max())
			}
			if b.Left() != (spent < p.MaxAttempts) {
				t.Fatalf("op %d: Left() = %v with %d of %d spent", i, b.Left(), spent, p.MaxAttempts)
			}
		}
	})
}
