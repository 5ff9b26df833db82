package backoff_test

import (
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// The default schedule is pinned exactly: docs/design.md §5 promises it to users.
func TestDefaultSchedule(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	want := []time.Duration{s(0.5), s(1), s(2), s(4), s(8), s(16), s(30), s(30), s(30), s(30)}
	for _, p := range []backoff.Policy{backoff.Default(), backoff.DefaultHTTP()} {
		if diff := cmp.Diff(want, p.Schedule()); diff != "" {
			t.Errorf("Schedule() mismatch (-want +got):\n%s", diff)
		}
		if got, want := p.Total(), s(151.5); got != want {
			t.Errorf("Total() = %v, want %v", got, want)
		}
	}
}

// refDelay is the textbook formula in arbitrary precision: the oracle.
func refDelay(p backoff.Policy, n int) time.Duration {
	d := new(big.Int).Lsh(big.NewInt(int64(p.InitialDelay)), uint(n-1))
	if d.Cmp(big.NewInt(int64(p.MaxDelay))) > 0 {
		return p.MaxDelay
	}
	return time.Duration(d.Int64())
}

func TestDelayTable(t *testing.T) {
	tests := []struct {
		name string
		p    backoff.Policy
		n    int
		want time.Duration
	}{
		{"n=1 is initialDelay", backoff.Default(), 1, 500 * time.Millisecond},
		{"n=0 treated as 1", backoff.Default(), 0, 500 * time.Millisecond},
		{"n negative treated as 1", backoff.Default(), math.MinInt, 500 * time.Millisecond},
		{"doubling", backoff.Default(), 6, 16 * time.Second},
		{"first capped", backoff.Default(), 7, 30 * time.Second},
		{"reaches cap exactly", backoff.Policy{InitialDelay: time.Second, MaxDelay: 8 * time.Second}, 4, 8 * time.Second},
		{"stays at exact cap", backoff.Policy{InitialDelay: time.Second, MaxDelay: 8 * time.Second}, 5, 8 * time.Second},
		{"odd cap", backoff.Policy{InitialDelay: 3, MaxDelay: 10}, 3, 10},
		{"odd cap minus one", backoff.Policy{InitialDelay: 3, MaxDelay: 10}, 2, 6},
		{"1ns doubling below 24h", backoff.Policy{InitialDelay: 1, MaxDelay: 24 * time.Hour}, 47, 1 << 46},
		{"1ns capped at 24h", backoff.Policy{InitialDelay: 1, MaxDelay: 24 * time.Hour}, 48, 24 * time.Hour},
		{"n=MaxInt", backoff.Policy{InitialDelay: 1, MaxDelay: 24 * time.Hour}, math.MaxInt, 24 * time.Hour},
		{"maxDelay == initialDelay", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Second}, 2, time.Second},
		// Unresolved policies: defined, never negative.
		{"unresolved: shift 62 below int64 cap", backoff.Policy{InitialDelay: 1, MaxDelay: math.MaxInt64}, 63, 1 << 62},
		{"unresolved: shift 63 hits int64 cap", backoff.Policy{InitialDelay: 1, MaxDelay: math.MaxInt64}, 64, math.MaxInt64},
		{"unresolved: max below initial", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Millisecond}, 1, time.Millisecond},
		{"unresolved: zero initial", backoff.Policy{InitialDelay: 0, MaxDelay: time.Second}, 3, 0},
		{"unresolved: negative initial", backoff.Policy{InitialDelay: -time.Second, MaxDelay: time.Second}, 3, 0},
		{"unresolved: negative max", backoff.Policy{InitialDelay: time.Second, MaxDelay: -time.Second}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.n); got != tt.want {
				t.Errorf("Delay(%d) = %v (%d ns), want %v (%d ns)", tt.n, got, got, tt.want, tt.want)
			}
		})
	}
}

// Delay never overflows: checked against the big.Int oracle where it is
// cheap, and for monotonicity and the cap everywhere, including n far past
// the 63 bits a Duration has.
func TestDelayOverflowSafe(t *testing.T) {
	var ns []int
	for n := 1; n <= 100; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 62, 63, 64, 65, 1_000_000, math.MaxInt-1, math.MaxInt)
	slices.Sort(ns)

	initials := []time.Duration{1, time.Microsecond, 500 * time.Millisecond, time.Hour, 24*time.Hour - 1, 24 * time.Hour}
	for _, initial := range initials {
		p := backoff.Policy{Enabled: true, InitialDelay: initial, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: backoff.MaxMaxAttempts}
		if _, err := p.Resolve(); err != nil {
			t.Fatalf("test policy invalid: %v", err)
		}
		prev := time.Duration(0)
		for _, n := range ns {
			d := p.Delay(n)
			if d <= 0 || d > p.MaxDelay {
				t.Errorf("initial %v: Delay(%d) = %v, want in (0, %v]", initial, n, d, p.MaxDelay)
			}
			if d < prev {
				t.Errorf("initial %v: Delay(%d) = %v < previous %v", initial, n, d, prev)
			}
			if n <= 200 {
				if want := refDelay(p, n); d != want {
					t.Errorf("initial %v: Delay(%d) = %d ns, oracle says %d ns", initial, n, d, want)
				}
			} else if d != p.MaxDelay {
				t.Errorf("initial %v: Delay(%d) = %v, want the cap %v", initial, n, d, p.MaxDelay)
			}
			prev = d
		}
	}
}

func TestTotal(t *testing.T) {
	tests := []struct {
		name string
		p    backoff.Policy
		want time.Duration
	}{
		{"default", backoff.Default(), 151500 * time.Millisecond},
		{"one attempt", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: 1}, time.Second},
		{"never capped", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Hour, MaxAttempts: 4}, 15 * time.Second},
		{"capped from the start", backoff.Policy{InitialDelay: time.Minute, MaxDelay: time.Minute, MaxAttempts: 5}, 5 * time.Minute},
		// 1e6 · 1ms = 1000s, after 1,2,4,…,512µs of doubling (1023µs) and
		// 1e6−10 retries at the 1ms cap.
		{"1e6 attempts, 1ms cap", backoff.Policy{InitialDelay: time.Microsecond, MaxDelay: time.Millisecond, MaxAttempts: 1_000_000}, 1023*time.Microsecond + (1_000_000-10)*time.Millisecond},
		// 1e6 · 24h is about 2.7e5 years: it does not fit in a Duration
		// (≈292 years) and must saturate, never wrap negative.
		{"1e6 attempts, 24h cap saturates", backoff.Policy{InitialDelay: time.Second, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: backoff.MaxMaxAttempts}, math.MaxInt64},
		{"1e6 attempts, 1ns initial, 24h cap saturates", backoff.Policy{InitialDelay: 1, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: backoff.MaxMaxAttempts}, math.MaxInt64},
		// Just fits: 106751 days of 24h is below the int64 limit of ns.
		{"largest unsaturated count of 24h", backoff.Policy{InitialDelay: backoff.MaxMaxDelay, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: 106751}, 106751 * 24 * time.Hour},
		{"one more saturates", backoff.Policy{InitialDelay: backoff.MaxMaxDelay, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: 106752}, math.MaxInt64},
		// Unresolved policies: O(1), never negative, never a hang.
		{"unresolved: MaxInt attempts", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: math.MaxInt}, math.MaxInt64},
		{"unresolved: doubling phase overflows", backoff.Policy{InitialDelay: 3, MaxDelay: math.MaxInt64, MaxAttempts: 100}, math.MaxInt64},
		// MaxInt·1ns is exactly MaxInt64: no saturation, and no loop over
		// MaxInt retries either (Total is O(log), not O(MaxAttempts)).
		{"unresolved: MaxInt attempts of 1ns fit exactly", backoff.Policy{InitialDelay: 1, MaxDelay: 1, MaxAttempts: math.MaxInt}, math.MaxInt64},
		{"unresolved: zero initial", backoff.Policy{InitialDelay: 0, MaxDelay: time.Minute, MaxAttempts: math.MaxInt}, 0},
		{"unresolved: no attempts", backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: -3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Total(); got != tt.want {
				t.Errorf("Total() = %v (%d ns), want %v (%d ns)", got, got, tt.want, tt.want)
			}
		})
	}
}

func TestScheduleLength(t *testing.T) {
	tests := []struct {
		name     string
		attempts int
		want     int
	}{
		{"one", 1, 1},
		{"1e6", backoff.MaxMaxAttempts, backoff.MaxMaxAttempts},
		{"unresolved zero", 0, 0},
		{"unresolved negative", -1, 0},
		{"unresolved huge is clamped", math.MaxInt, backoff.MaxMaxAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := backoff.Policy{InitialDelay: time.Millisecond, MaxDelay: time.Second, MaxAttempts: tt.attempts}
			s := p.Schedule()
			if len(s) != tt.want {
				t.Fatalf("len(Schedule()) = %d, want %d", len(s), tt.want)
			}
			for i, d := range s {
				if d != p.Delay(i+1) {
					t.Fatalf("Schedule()[%d] = %v, want Delay(%d) = %v", i, d, i+1, p.Delay(i+1))
				}
			}
		})
	}
}
