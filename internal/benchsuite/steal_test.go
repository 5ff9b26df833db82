package benchsuite

import (
	"math"
	"testing"
)

// TestSteal: the steal share between two readings of /proc/stat's cpu
// line, and what cannot be read.
func TestSteal(t *testing.T) {
	a := parseCPULine("cpu  100 0 50 800 10 0 0 40 0 0")
	b := parseCPULine("cpu  150 0 70 900 10 0 0 60 7 0")
	if !a.ok || !b.ok || a.total != 1000 || b.steal != 60 {
		t.Fatalf("parsed %+v and %+v", a, b)
	}
	// 20 of the 190 ticks between them were stolen (guest ticks are in user).
	if got := stealBetween(a, b); math.Abs(got-20.0/190) > 1e-9 {
		t.Errorf("stealBetween = %.4f, want %.4f", got, 20.0/190)
	}
	for _, line := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if c := parseCPULine(line); c.ok {
			t.Errorf("parseCPULine(%q) = %+v, want not ok", line, c)
		}
	}
	if got := stealBetween(a, cpuTimes{}); got != -1 {
		t.Errorf("stealBetween with an unread side = %v, want -1", got)
	}
	if got := stealBetween(b, a); got != -1 {
		t.Errorf("stealBetween backwards = %v, want -1", got)
	}
	r := &Report{Steal: -1}
	if got := r.stealText(); got != "not known (no /proc/stat)" {
		t.Errorf("stealText of unknown = %q", got)
	}
}

// TestRatioAgainst: a ratio prints to three decimals unless they would
// read as the target it misses (or meets).
func TestRatioAgainst(t *testing.T) {
	for _, c := range []struct {
		r, target float64
		want      string
	}{
		{1.0341, 1.05, "1.034"},
		{1.1003, 1.10, "1.1003"},
		{1.09996, 1.10, "1.100"}, // met, and reads as met
		{0.2571, 0.25, "0.257"},
		{0.25, 0.25, "0.250"},
	} {
		if got := ratioAgainst(c.r, c.target); got != c.want {
			t.Errorf("ratioAgainst(%v, %v) = %q, want %q", c.r, c.target, got, c.want)
		}
	}
}
