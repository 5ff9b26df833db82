package faultsuite

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// rateLimiter answers every request with 429 and Retry-After while on,
// as a hosted server's gateway does, and counts what it refused.
type rateLimiter struct {
	next    http.Handler
	on      atomic.Bool
	refused atomic.Int32
}

func (l *rateLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l.on.Load() {
		l.refused.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	l.next.ServeHTTP(w, r)
}

// A rate-limited server is alive: its 429 answers to the health probe
// cause no reconnect, and the probe waits the Retry-After it was given
// instead of asking again every interval.
func TestFaultRateLimitIsHonouredByTheProbe(t *testing.T) {
	limiter := &rateLimiter{}
	server := startPBServer(t, pbOptions{stateless: true, noListen: true, wrap: func(h http.Handler) http.Handler {
		limiter.next = h
		return limiter
	}})
	const interval = 100 * time.Millisecond
	rig := newPBRig(t, &transport.HTTP{URL: server.url, Server: "pb", ProbeInterval: interval})
	rig.mustEcho("up")
	limiter.on.Store(true)
	const window = 1500 * time.Millisecond
	time.Sleep(window) // the probe runs on its own; nothing to wait for but time
	limiter.on.Store(false)
	refused := limiter.refused.Load()
	s := rig.sup.State()
	t.Logf("%v of 429 with Retry-After: 1: %d probes refused; state %v gen %d attempt %d", window, refused, s.State, s.Gen, s.Attempt)
	if s.State != fsm.Established || s.Gen != 1 || s.Attempt != 0 {
		t.Errorf("after %v of 429: state %v gen %d attempt %d; want established gen 1 attempt 0", window, s.State, s.Gen, s.Attempt)
	}
	if l := rig.left(); len(l) != 0 {
		t.Errorf("the generation left established: %+v", l[0])
	}
	// Every 100 ms that would be about 15; Retry-After: 1 allows 2.
	if refused < 1 || refused > 2 {
		t.Errorf("%d probes during %v of Retry-After: 1; want 1 or 2", refused, window)
	}
	rig.mustEcho("after")
}
