package benchsuite

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestInterleaveBatches: under a load that drifts from pair to pair, and
// one disturbed batch on each side, the pairs' own ratios stay at the true
// one; the batch size is calibrated to batchTarget; the order alternates
// (issue 39's call rows).
func TestInterleaveBatches(t *testing.T) {
	for _, c := range []struct {
		name  string
		slowB float64 // b's true cost over a's
	}{{"even", 1.0}, {"b 4% slower", 1.04}} {
		t.Run(c.name, func(t *testing.T) {
			clock := time.Unix(0, 0)
			now := func() time.Time { return clock }
			var order []byte
			halves := 0 // batches since the first b (the first pair's a is not counted)
			pairing := false
			// A sawtooth load, the same for both halves of a pair: up to 1.43×.
			load := func() float64 { return 1 + 0.5*float64(((halves+1)/2)%7)/7 }
			cost := func(side byte, scale float64) func(int) error {
				return func(n int) error {
					pairing = pairing || side == 'b'
					if n > 1 {
						order = append(order, side)
					}
					f := scale * load()
					switch {
					case pairing && halves == 18:
						f *= 3 // a collection cycle in one batch
					case pairing && halves == 29:
						f *= 2 // and another in a later one
					}
					clock = clock.Add(time.Duration(float64(n) * float64(10*time.Microsecond) * f))
					if pairing {
						halves++
					}
					return nil
				}
			}
			got, err := interleaveBatches(time.Second, now, cost('a', 1), cost('b', c.slowB))
			if err != nil {
				t.Fatal(err)
			}
			if got.n < 900 || got.n > 1100 {
				t.Errorf("calls per batch = %d, want about %d (batchTarget / 10 µs)", got.n, batchTarget/(10*time.Microsecond))
			}
			if math.Abs(got.ratio-c.slowB) > 1e-6 {
				t.Errorf("ratio = %.4f, want %.4f", got.ratio, c.slowB)
			}
			if len(got.a) != len(got.b) || len(got.a) < 4 {
				t.Fatalf("pairs: %d a, %d b batches", len(got.a), len(got.b))
			}
			// ABBA: the first of each pair alternates (the calibration's
			// batches run before any pair and are a alone).
			pairs := string(order[len(order)-2*len(got.a):])
			if !strings.HasPrefix(pairs, "abbaab") {
				t.Errorf("order of the pairs starts %q, want abbaab…", pairs[:min(6, len(pairs))])
			}
		})
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

// TestInterleaveN: three paths in blocks, forward then reversed (ABC CBA),
// every path n samples; blockDiffs pairs whole blocks of two paths.
func TestInterleaveN(t *testing.T) {
	ps := []*path{{name: "a"}, {name: "b"}, {name: "c"}}
	var order strings.Builder
	calls := 0
	out, err := interleaveN(ps, 5, 2, func(p *path, i int) (time.Duration, error) {
		order.WriteString(p.name)
		calls++
		// b costs 5 more than c; a load that climbs with every call.
		base := map[string]time.Duration{"a": 10, "b": 25, "c": 20}[p.name]
		return base + time.Duration(calls), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := order.String(), "aabbcc"+"ccbbaa"+"abc"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	for i, d := range out {
		if len(d) != 5 {
			t.Errorf("path %d: %d samples, want 5", i, len(d))
		}
	}
	// Block 0: b ran at calls 3-4, c at 5-6 (b-c = 5-2); block 1: c at
	// 7-8, b at 9-10 (5+2). The fifth sample is no whole block.
	got := blockDiffs(out[1], out[2], 2)
	if len(got) != 2 || got[0] != 3 || got[1] != 7 {
		t.Errorf("blockDiffs = %v, want [3 7]", got)
	}
}
