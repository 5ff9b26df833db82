package benchsuite

import (
	"errors"
	"runtime"
	"slices"
	"time"
)

// batchTarget is how long one batch of interleaveBatches should take: long
// enough that the clock's and the loop's own cost vanish, short enough
// that a load drifting on a shared machine barely moves between the two
// halves of a pair.
const batchTarget = 10 * time.Millisecond

// batchPairs are the figures of interleaveBatches: each side's ns/op of every
// batch, and the median of the pairs' own ratios (b's batch over a's).
type batchPairs struct {
	a, b  []float64 // ns/op per batch
	ratio float64
	n     int // calls per batch
}

// interleaveBatches times a and b in alternating batches of n calls each (the
// pair's order alternates, ABBA, so neither always goes first), for
// budget in all, n chosen so a batch of a takes about batchTarget. The
// ratio is the median over pairs of b's per-op time over a's: the two
// halves of a pair run within milliseconds of each other, so a load that
// comes and goes over seconds (another process, the garbage collector's
// cycles) moves both alike, where rounds of a second each let it move
// one side alone.
func interleaveBatches(budget time.Duration, now func() time.Time, a, b func(n int) error) (batchPairs, error) {
	// Calibrate on a alone, warmed up.
	n := 1
	for {
		t0 := now()
		if err := a(n); err != nil {
			return batchPairs{}, err
		}
		if d := now().Sub(t0); d >= batchTarget/4 || n >= 1<<20 {
			n = max(1, int(float64(n)*float64(batchTarget)/float64(max(d, 1))))
			break
		}
		n *= 2
	}
	var out batchPairs
	out.n = n
	var ratios []float64
	deadline := now().Add(budget)
	for i := 0; i < 4 || now().Before(deadline); i++ {
		da, db, err := timePair(now, n, a, b, i%2 == 1)
		if err != nil {
			return out, err
		}
		pa, pb := float64(da.Nanoseconds())/float64(n), float64(db.Nanoseconds())/float64(n)
		out.a, out.b = append(out.a, pa), append(out.b, pb)
		ratios = append(ratios, pb/pa)
	}
	out.ratio = medianOf(ratios)
	return out, nil
}

// timePair times one batch of a and one of b, b first when bFirst.
func timePair(now func() time.Time, n int, a, b func(int) error, bFirst bool) (da, db time.Duration, err error) {
	run := func(f func(int) error) (time.Duration, error) {
		runtime.GC()
		t0 := now()
		err := f(n)
		return now().Sub(t0), err
	}
	if bFirst {
		if db, err = run(b); err == nil {
			da, err = run(a)
		}
	} else if da, err = run(a); err == nil {
		db, err = run(b)
	}
	if err == nil && (da <= 0 || db <= 0) {
		err = errors.New("interleaveBatches: a batch took no time")
	}
	return da, db, err
}

// medianOf is the median of xs (the mean of the middle two for an even
// count); xs is sorted in place.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// quantileOf is the q-quantile of xs by nearest rank, xs unchanged.
func quantileOf(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(max(i, 0), len(s)-1)]
}
