package benchsuite

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// durations is a sample of latencies.
type durations []time.Duration

// pct returns the p-th percentile (0 < p ≤ 100) by nearest rank, or 0 for
// an empty sample.
func (d durations) pct(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (d durations) max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d)
}

// maxInWindow returns the most instants of ts that fall in any half-open
// window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	best, i := 0, 0
	for j := range s {
		for s[j].Sub(s[i]) >= w {
			i++
		}
		best = max(best, j-i+1)
	}
	return best
}

// span is the time from the first to the last of ts.
func span(ts []time.Time) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	lo, hi := ts[0], ts[0]
	for _, t := range ts[1:] {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}

// fmtDur renders d with a precision that suits its size.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

// fmtBytes renders n bytes (signed) in B, KiB or MiB.
func fmtBytes(n float64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	switch {
	case n < 1024:
		return fmt.Sprintf("%s%.0f B", sign, n)
	case n < 1024*1024:
		return fmt.Sprintf("%s%.1f KiB", sign, n/1024)
	default:
		return fmt.Sprintf("%s%.2f MiB", sign, n/(1024*1024))
	}
}

// fmtRatio renders a/b, or "—" when b is zero.
func fmtRatio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", a/b)
}

// ratioAgainst prints a ratio to three decimals, or to as many more as
// tell it apart from target when three would print the target itself
// (1.1003 against ≤ 1.10 is a miss, and must not read "1.100").
func ratioAgainst(r, target float64) string {
	for d := 3; d < 8; d++ {
		s := strconv.FormatFloat(r, 'f', d, 64)
		if v, _ := strconv.ParseFloat(s, 64); (v <= target) == (r <= target) {
			return s
		}
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
