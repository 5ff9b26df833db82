package benchsuite

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitLimit bounds every single wait of the suite: a wedged step fails the
// section with an error instead of hanging the run.
const waitLimit = 20 * time.Second

// stamp is a transition with the real time the observer saw it.
type stamp struct {
	tr mcpkeep.Transition
	at time.Time
}

// rig is a started supervisor whose transitions are queued for the suite.
type rig struct {
	s     *mcpkeep.Supervisor
	ev    chan stamp
	unsub func()
	lost  atomic.Int64 // transitions the observer could not queue
}

// newRig creates and starts a supervisor with an observer queueing every
// transition (non-blocking: an observer must return at once).
func newRig(ctx context.Context, opts mcpkeep.Options) (*rig, error) {
	s, err := mcpkeep.New(opts)
	if err != nil {
		return nil, err
	}
	r := &rig{s: s, ev: make(chan stamp, 4096)}
	r.unsub = s.Subscribe(func(t mcpkeep.Transition) {
		select {
		case r.ev <- stamp{t, time.Now()}:
		default:
			r.lost.Add(1)
		}
	})
	if err := s.Start(ctx); err != nil {
		r.unsub()
		return nil, err
	}
	if st := s.State().State; st != fsm.Established {
		r.close()
		return nil, fmt.Errorf("supervisor %s after Start, want established", st)
	}
	return r, nil
}

// drain forgets queued transitions.
func (r *rig) drain() {
	for {
		select {
		case <-r.ev:
		default:
			return
		}
	}
}

// await returns the next queued transition into state to (not an
// internal one), skipping others, waiting up to waitLimit.
func (r *rig) await(to fsm.State) (stamp, error) {
	return r.awaitFunc(to.String(), func(t mcpkeep.Transition) bool { return t.To == to && t.From != to })
}

// awaitFunc returns the next queued transition matching pred.
func (r *rig) awaitFunc(what string, pred func(mcpkeep.Transition) bool) (stamp, error) {
	t := time.NewTimer(waitLimit)
	defer t.Stop()
	for {
		select {
		case st := <-r.ev:
			if pred(st.tr) {
				return st, nil
			}
		case <-t.C:
			return stamp{}, fmt.Errorf("no transition %s within %s (state %s)", what, waitLimit, r.s.State().State)
		}
	}
}

func (r *rig) close() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_ = r.s.Dispose(ctx)
	r.unsub()
}

// newClient is a client configured like the supervisor's: the same
// identity and capabilities (none: a supervisor without host handlers
// declares none; on 2026-07-28 the server decodes clientInfo and the
// capabilities from every request's _meta, and a one-byte string decodes
// without allocating, so even the version string shows in allocs/op, and
// the SDK's default roots capability costs 18 allocations a call), and a
// list_changed handler, which makes the SDK hold a subscriptions/listen
// stream open as the supervisor's does.
func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpkeep", Version: mcpkeep.Version}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
}

// listAll lists every tool page.
func listAll(ctx context.Context, cs *mcp.ClientSession) (int, error) {
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// within runs f with a waitLimit deadline.
func within(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, waitLimit)
}
