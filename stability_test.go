package mcpkeep

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// With a short cap (maxDelay 1 s) the stability window is floored at
// backoff.MinStability (docs/design.md §5): a server that dies 1.5 s after
// every connect spends its budget and is given up. With the window equal
// to maxDelay, as before, each crash came after the window, reset the
// budget, and the server was restarted forever at attempt 1.
func TestStabilityFloorEndsACrashLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *Options) {
			o.Policy = backoff.Policy{Enabled: true, InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: 3}
		})
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		for gen := uint64(1); gen <= 20 && h.state() != fsm.Exhausted; gen++ {
			h.wantState(fsm.Established)
			h.advance(1500 * time.Millisecond)
			h.mem.Gen(gen).Kill()
			h.settle()
			if h.state() == fsm.BackingOff {
				h.advance(time.Second) // every retry of this policy is due within 1 s
			}
		}
		h.wantState(fsm.Exhausted)
		if g := h.sup.State().Gen; g != 4 {
			t.Errorf("given up at generation %d, want 4: the first connect and maxAttempts retries", g)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
