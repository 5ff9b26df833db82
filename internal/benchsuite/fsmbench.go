package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"testing"

	lfsm "github.com/looplab/fsm"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// fsmCycle is fsm/bench_test.go's cycle: connect, a tools change, a stable
// window, a stale event (dropped), a crash, a backoff, a failed retry, a
// repeated failure signal (dropped), a second backoff, back to connecting.
var fsmCycle = []struct {
	ev fsm.Event
	f  fsm.Facts
}{
	{fsm.Connected, fsm.Facts{}},
	{fsm.ToolsChanged, fsm.Facts{}},
	{fsm.Stable, fsm.Facts{}},
	{fsm.ToolsChanged, fsm.Facts{Stale: true}},
	{fsm.Closed, fsm.Facts{}},
	{fsm.Released, fsm.Facts{}},
	{fsm.RetryDue, fsm.Facts{}},
	{fsm.Failed, fsm.Facts{}},
	{fsm.Failed, fsm.Facts{Repeated: true}},
	{fsm.Released, fsm.Facts{}},
	{fsm.RetryDue, fsm.Facts{}},
}

// BenchFire is one step of the cycle through the declared fsm.Machine.
func BenchFire(b *testing.B) {
	m := fsm.New()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := fsmCycle[i]
		if _, err := m.Fire(c.ev, c.f); (err == nil) != (c.f == fsm.Facts{}) {
			b.Fatalf("step %d (%s in %s): %v", i, c.ev, m.State(), err)
		}
		if i++; i == len(fsmCycle) {
			i = 0
		}
	}
}

// looplabEvents is fsm.Table as a raw looplab/fsm table: one event per
// row, guarded rows of one (state, event) named apart by their guard,
// because looplab keys its table by (event, source) only.
func looplabEvents() lfsm.Events {
	var evs lfsm.Events
	for _, t := range fsm.Table {
		evs = append(evs, lfsm.EventDesc{Name: looplabName(t), Src: []string{t.From.String()}, Dst: t.To.String()})
	}
	return evs
}

func looplabName(t fsm.Transition) string {
	if t.Guard.Name != "" {
		return t.Event.String() + "[" + t.Guard.Name + "]"
	}
	return t.Event.String()
}

// looplabSteps resolves the cycle's guards ahead of time: the raw baseline
// is a caller that already knows which row applies and drops a stale or
// repeated signal with its own check ("" here), so it pays for looplab's
// Event alone.
func looplabSteps() ([]string, error) {
	state := fsm.Initial
	var steps []string
	for _, c := range fsmCycle {
		t, err := fsm.Resolve(state, c.ev, c.f)
		if err != nil {
			steps = append(steps, "")
			continue
		}
		steps = append(steps, looplabName(t))
		state = t.To
	}
	if state != fsm.Initial {
		return nil, fmt.Errorf("cycle ends in %s, want %s", state, fsm.Initial)
	}
	return steps, nil
}

// BenchLooplab is one step of the same cycle as a raw looplab Event.
func BenchLooplab(b *testing.B) {
	steps, err := looplabSteps()
	if err != nil {
		b.Fatal(err)
	}
	lf := lfsm.NewFSM(fsm.Initial.String(), looplabEvents(), nil)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if name := steps[i]; name != "" {
			if err := lf.Event(ctx, name); err != nil {
				var nt lfsm.NoTransitionError
				if !errors.As(err, &nt) {
					b.Fatalf("step %d (%s): %v", i, name, err)
				}
			}
		}
		if i++; i == len(steps) {
			i = 0
		}
	}
}

type fsmResult struct{ fire, looplab benchFigures }

// runFSM is section 6.
func runFSM(cfg Config) (fsmResult, error) {
	var err error
	f, l, perr := pair(cfg.Rounds, BenchFire, BenchLooplab, &err)
	return fsmResult{f, l}, perr
}
