package benchsuite

import (
	"math"
	"testing"
	"time"
)

// TestPairedRatio: under a load that drifts across the rounds, the ratio
// of the two sides' medians shows a difference the rounds do not have; the
// median of the rounds' own ratios does not (issue 39's call rows).
func TestPairedRatio(t *testing.T) {
	var ra, rb []testing.BenchmarkResult
	// Round i: both halves cost 10 µs × the load of round i, except round
	// 4 (b 20% slower) and round 5 (a 20% faster). The load climbs half-way
	// through, so the two medians come from rounds of different loads.
	loads := []float64{1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.2, 1.2}
	for i, l := range loads {
		a := time.Duration(10_000 * l)
		b := a
		if i == 4 {
			b = a * 12 / 10
		}
		if i == 5 {
			a = a * 8 / 10 // a lucky a round in the slower half
		}
		ra = append(ra, testing.BenchmarkResult{N: 1000, T: 1000 * a})
		rb = append(rb, testing.BenchmarkResult{N: 1000, T: 1000 * b})
	}
	ofMedians := median(rb).nsPerOp / median(ra).nsPerOp
	got := pairedRatio(ra, rb)
	if math.Abs(got-1) > 1e-9 {
		t.Errorf("pairedRatio = %.4f, want 1 (eight of ten rounds are even)", got)
	}
	if ofMedians <= 1.05 {
		t.Fatalf("the fixture's medians' ratio is %.4f; want > 1.05 so the test tells the two apart", ofMedians)
	}
	// An odd count takes the middle one.
	if r := pairedRatio(ra[:3], append([]testing.BenchmarkResult{{N: 1, T: 30_000}}, rb[1:3]...)); math.Abs(r-1) > 1e-9 {
		t.Errorf("pairedRatio of 3 rounds = %.4f, want 1", r)
	}
}

// TestPairedDetect: the die → lost cycles' own ratios, each over the
// CommandTransport detection run beside it; 0 when not one for one.
func TestPairedDetect(t *testing.T) {
	mk := []crashSample{{lost: 2 * time.Millisecond}, {lost: 9 * time.Millisecond}, {lost: 3 * time.Millisecond}}
	sdk := []sdkResult{{fromDie: 2 * time.Millisecond}, {fromDie: 10 * time.Millisecond}, {fromDie: 2 * time.Millisecond}}
	if got := pairedDetect(mk, sdk); math.Abs(got-1) > 1e-9 {
		t.Errorf("pairedDetect = %.4f, want 1 (ratios 0.9, 1, 1.5)", got)
	}
	if got := pairedDetect(mk, sdk[:2]); got != 0 {
		t.Errorf("pairedDetect of unequal counts = %.4f, want 0", got)
	}
}

// TestWaitFloor: the reachable die → lost ratio is CommandTransport's time
// plus the exit's wait, over CommandTransport's, rounded up.
func TestWaitFloor(t *testing.T) {
	for _, c := range []struct {
		wait, c time.Duration
		want    float64
	}{
		{200 * time.Microsecond, 2 * time.Millisecond, 1.10},
		{201 * time.Microsecond, 2 * time.Millisecond, 1.11},
		{0, 2 * time.Millisecond, 1.00},
		{time.Millisecond, 0, 0},
	} {
		if got := waitFloor(c.wait, c.c); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("waitFloor(%v, %v) = %.2f, want %.2f", c.wait, c.c, got, c.want)
		}
	}
}
