package benchsuite

import (
	"fmt"
	"os"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
)

// idlePhases splits one first call to an idle server at the transitions
// the proxy's --trace file records (wall-clock times, as the host's):
// the call sent → the demand fired (idle → connecting: the hop in and the
// supervisor's loop), → established (spawn, handshake, the sticky state,
// the loop again), → the answer read by the host (the call to the server,
// its answer, the hop out).
type idlePhases struct {
	demand, connect, answer time.Duration
}

// readIdlePhases reads the phases of the call sent at sent and answered at
// done from the trace file path (one server, one demand start).
func readIdlePhases(path string, sent, done time.Time) (idlePhases, error) {
	f, err := os.Open(path)
	if err != nil {
		return idlePhases{}, err
	}
	defer f.Close()
	h, evs, err := trace.Read(f)
	if err != nil {
		return idlePhases{}, fmt.Errorf("trace %s: %w", path, err)
	}
	var demanded, established time.Time
	for _, e := range evs {
		at := h.Started.Add(e.Offset)
		switch {
		case e.Event == fsm.Demand && demanded.IsZero():
			demanded = at
		case e.Event == fsm.Connected && established.IsZero():
			established = at
		}
	}
	if demanded.IsZero() || established.IsZero() {
		return idlePhases{}, fmt.Errorf("trace %s: no demand start (%d events)", path, len(evs))
	}
	return idlePhases{demand: demanded.Sub(sent), connect: established.Sub(demanded), answer: done.Sub(established)}, nil
}
