package mcpkeep

import (
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HeartbeatEvery is how often a request that mcpkeep holds (waiting for
// its server to come back, or for the replay of a lost call) tells a host
// that asked for progress why it waits (docs/design.md §21): hosts whose
// timeouts reset on progress then do not give up on it.
const HeartbeatEvery = 5 * time.Second

// heartbeat is one request's progress while mcpkeep holds it. The server's
// own progress passes through it, so a heartbeat never goes below what
// the server reported (MCP wants progress to increase).
type heartbeat struct {
	fn     func(*mcp.ProgressNotificationParams)
	ticker *clock.Ticker // armed while held, on the supervisor's clock

	mu   sync.Mutex
	last float64 // the highest progress sent for the request
}

// newHeartbeat returns nil when the request has no progress handler.
func newHeartbeat(opts *CallOptions) *heartbeat {
	if opts == nil || opts.Progress == nil {
		return nil
	}
	return &heartbeat{fn: opts.Progress}
}

// relay is the progress handler given to the server's request: it
// records what the server reported and passes it on.
func (h *heartbeat) relay(p *mcp.ProgressNotificationParams) {
	h.mu.Lock()
	h.last = max(h.last, p.Progress)
	h.mu.Unlock()
	h.fn(p)
}

// progress returns the handler for the server's request, which is about
// to be sent: the request is no longer held, so the ticker rests (a tick
// it buffered while the server ran the call would otherwise fire at once
// when the request is held again, for its replay). The next hold arms a
// fresh one: its first beat comes a full HeartbeatEvery into the hold.
func (h *heartbeat) progress() func(*mcp.ProgressNotificationParams) {
	if h == nil {
		return nil
	}
	h.stop()
	h.ticker = nil
	return h.relay
}

// tick returns the channel of the next beat, arming the ticker the first
// time the request is held; nil (never ready) without a handler.
func (h *heartbeat) tick(c clock.Clock) <-chan time.Time {
	if h == nil {
		return nil
	}
	if h.ticker == nil {
		h.ticker = c.Ticker(HeartbeatEvery)
	}
	return h.ticker.C
}

// beat sends one heartbeat saying why the request waits.
func (h *heartbeat) beat(why string) {
	h.mu.Lock()
	h.last++
	p := &mcp.ProgressNotificationParams{Progress: h.last, Message: why}
	h.mu.Unlock()
	h.fn(p)
}

func (h *heartbeat) stop() {
	if h != nil && h.ticker != nil {
		h.ticker.Stop()
	}
}

// waitReason words why a request is held: "waiting for files:
// reconnecting, attempt 3 of 10".
func (s *Supervisor) waitReason(replay bool) string {
	snap := s.State()
	what := "waiting for " + s.opts.Name
	if replay {
		what += " to come back to repeat the call"
	}
	attempt := fmt.Sprintf("attempt %d of %d", snap.Attempt, snap.MaxAttempts)
	switch snap.State {
	case fsm.Connecting:
		if snap.Attempt == 0 {
			return what + ": connecting"
		}
		return what + ": reconnecting, " + attempt
	case fsm.BackingOff:
		msg := what + ": backing off, " + attempt
		if !snap.NextRetry.IsZero() {
			msg += fmt.Sprintf(", next in %v", max(snap.NextRetry.Sub(s.opts.Clock.Now()), 0).Round(time.Millisecond))
		}
		return msg
	case fsm.Lost:
		return what + ": the connection was lost, closing it"
	}
	return what + ": " + snap.State.String()
}
