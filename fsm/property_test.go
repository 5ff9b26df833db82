package fsm_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/mcpkeep/mcpkeep/fsm"
)

var factsGen = rapid.Custom(func(t *rapid.T) fsm.Facts {
	return fsm.Facts{
		Stale:             rapid.Bool().Draw(t, "stale"),
		Repeated:          rapid.Bool().Draw(t, "repeated"),
		ReconnectDisabled: rapid.Bool().Draw(t, "reconnectDisabled"),
		BudgetSpent:       rapid.Bool().Draw(t, "budgetSpent"),
		SignInRequired:    rapid.Bool().Draw(t, "signInRequired"),
		Busy:              rapid.Bool().Draw(t, "busy"),
		IdleStop:          rapid.Bool().Draw(t, "idleStop"),
		CallsOpen:         rapid.Bool().Draw(t, "callsOpen"),
	}
})

// eventGen draws mostly events declared in s (so walks get somewhere) and
// sometimes any event at all (so undeclared ones are tried too). Dispose is
// rare: it ends the walk's exploration, and every walk disposes at the end.
func eventGen(s fsm.State) *rapid.Generator[fsm.Event] {
	var declared []fsm.Event
	for _, ev := range fsm.Events {
		if ev != fsm.Dispose && len(fsm.Rows(s, ev)) > 0 {
			declared = append(declared, ev)
		}
	}
	if len(declared) == 0 {
		return rapid.SampledFrom(fsm.Events)
	}
	return rapid.Custom(func(t *rapid.T) fsm.Event {
		if rapid.IntRange(0, 9).Draw(t, "roll") == 0 {
			return rapid.SampledFrom(fsm.Events).Draw(t, "any")
		}
		return rapid.SampledFrom(declared).Draw(t, "declared")
	})
}

// TestRandomWalk fires random events with random Facts from connecting and
// checks after every step: the state changed only through a declared row
// whose guard holds, a rejected event changed nothing, looplab agrees,
// nothing leaves disposed. Every walk then drains to disposed, and across
// all walks every state is visited.
func TestRandomWalk(t *testing.T) {
	visited := map[fsm.State]bool{}
	rapid.Check(t, func(t *rapid.T) {
		m := fsm.New()
		visited[m.State()] = true
		steps := rapid.IntRange(0, 200).Draw(t, "steps")
		for range steps {
			ev := eventGen(m.State()).Draw(t, "event")
			f := factsGen.Draw(t, "facts")
			before := m.State()
			tr, err := fire(t, m, ev, f)
			after := m.State()
			visited[after] = true
			if err != nil {
				if after != before {
					t.Fatalf("%s/%s failed (%v) but moved to %s", before, ev, err, after)
				}
				if want, rerr := fsm.Resolve(before, ev, f); rerr == nil {
					t.Fatalf("%s/%s failed (%v) but Resolve picks %s", before, ev, err, want.To)
				}
				continue
			}
			if rowIndex(tr) < 0 || tr.From != before || tr.Event != ev || tr.To != after || !tr.Guard.Holds(f) {
				t.Fatalf("%s -%s-> %s via undeclared or unguarded row %+v (facts %+v)", before, ev, after, tr, f)
			}
			if before == fsm.Disposed {
				t.Fatalf("left disposed via %s", ev)
			}
		}
		// Whatever the walk reached, dispose and drain end in disposed.
		for _, ev := range []fsm.Event{fsm.Dispose, rapid.SampledFrom([]fsm.Event{fsm.Drained, fsm.DrainTimeout}).Draw(t, "drain")} {
			if m.State() == fsm.Disposed {
				break
			}
			if m.State() == fsm.Draining && ev == fsm.Dispose {
				continue
			}
			if _, err := fire(t, m, ev, factsGen.Draw(t, "drainFacts")); err != nil {
				t.Fatalf("%s in %s: %v", ev, m.State(), err)
			}
		}
		if m.State() != fsm.Disposed {
			t.Fatalf("dispose and drain ended in %s", m.State())
		}
	})
	for _, s := range fsm.States {
		if !visited[s] {
			t.Errorf("no random walk visited %s", s)
		}
	}
}
