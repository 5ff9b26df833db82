package mcpkeep

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// A request held through an outage (docs/design.md §6) waits only when
// the wait can end well: it fails at once, with fail-fast's text, when
// the next attempt is due after its bound, and when the server gave up.
// Held requests are counted, and the outage is logged once.
func TestHeldCallsWaitOnlyWithinTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		h.wantState(fsm.BackingOff) // retry 1 is due in 1 s

		short := goCall(h, "echo", &CallOptions{WaitForReady: true, ReadyTimeout: 500 * time.Millisecond})
		h.settle()
		r := resultOf(t, short) // at once: no time has passed
		var nc *NotConnectedError
		if !errors.As(r.err, &nc) || nc.State != fsm.BackingOff || nc.NextRetry.IsZero() {
			t.Fatalf("a call whose bound ends before the next retry = %v, want a NotConnectedError naming the retry", r.err)
		}

		a := goCall(h, "echo", &CallOptions{WaitForReady: true, ReadyTimeout: 2 * time.Second})
		b := goCall(h, "echo", &CallOptions{WaitForReady: true, ReadyTimeout: 2 * time.Second})
		h.settle()
		h.advance(time.Second) // gen 2
		for _, c := range []<-chan callResult{a, b} {
			if r := resultOf(t, c); r.err != nil {
				t.Fatalf("a call held through the restart: %v", r.err)
			}
		}
		if n := h.sup.CallsHeld(); n != 2 {
			t.Fatalf("CallsHeld = %d, want 2 (the one that failed at once was not held)", n)
		}
		if l := h.logsNamed("holding calls until the server is back"); len(l) != 1 || l[0].Attrs["state"] != "backing-off" {
			t.Fatalf("hold logs %+v, want one for the outage", l)
		}

		// Another outage is logged again.
		h.mem.Gen(2).Kill()
		h.settle()
		c := goCall(h, "echo", &CallOptions{WaitForReady: true, ReadyTimeout: 10 * time.Second})
		h.settle()
		h.advance(2 * time.Second) // retry 2 (no stability reset)
		if r := resultOf(t, c); r.err != nil {
			t.Fatal(r.err)
		}
		if l := h.logsNamed("holding calls until the server is back"); len(l) != 2 {
			t.Fatalf("%d hold logs after two outages, want 2", len(l))
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A server that gave up fails a held request at once, whatever its bound.
func TestHeldCallFailsAtOnceWhenExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.Policy.Enabled = false })
		h.mem.Fault = onlyGen(1, transport.Fault{})
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		h.wantState(fsm.Exhausted)
		c := goCall(h, "echo", &CallOptions{WaitForReady: true, ReadyTimeout: 10 * time.Second})
		h.settle()
		if r := resultOf(t, c); !errors.Is(r.err, ErrExhausted) {
			t.Fatalf("held call on an exhausted server = %v, want ErrExhausted at once", r.err)
		}
		if n := h.sup.CallsHeld(); n != 0 {
			t.Fatalf("CallsHeld = %d, want 0", n)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
