package proxy

import (
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// The init wait counts from InitWaitFrom when it is set (the command gives
// its own start: a stdio host times its server from the spawn, so a wait
// counted from the host's first request overran the host's budget by the
// proxy's own start-up). A server hung at its handshake holds the host's
// initialize only for what is left of the wait.
func TestInitWaitCountsFromInitWaitFrom(t *testing.T) {
	const wait = 3 * time.Second
	r := newRig(t, Options{InitWait: wait, InitWaitFrom: time.Now().Add(-wait + 200*time.Millisecond)}, "a")
	r.mems["a"].Fault = func(uint64) transport.Fault { return transport.Fault{Hang: true} }
	start := time.Now()
	r.host("2025-11-25", nil)
	t.Logf("took %v", time.Since(start))
	if d := time.Since(start); d > wait/2 {
		t.Errorf("initialize answered after %v; want what was left of the %v wait (200 ms)", d, wait)
	}
}
