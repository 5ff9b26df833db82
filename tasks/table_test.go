package tasks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/tasks"
)

// allFacts enumerates every combination of the guards' facts.
func allFacts() []tasks.Facts {
	var out []tasks.Facts
	for i := 0; i < 8; i++ {
		out = append(out, tasks.Facts{RPCError: i&1 != 0, TooLarge: i&2 != 0, Resending: i&4 != 0})
	}
	return out
}

// TestTableGuardsPartition: for every declared (state, event), exactly
// one row holds for every combination of facts: the table is total where
// declared and never ambiguous.
func TestTableGuardsPartition(t *testing.T) {
	for _, s := range tasks.States {
		for _, ev := range tasks.Events {
			for _, f := range allFacts() {
				_, err := tasks.Resolve(s, ev, f)
				if errors.Is(err, tasks.ErrNotDeclared) {
					continue
				}
				if err != nil {
					t.Errorf("%s/%s %+v: %v", s, ev, f, err)
				}
			}
		}
	}
}

// TestTableTerminalNeverLeft is T1 as data: every row out of a terminal
// state is internal.
func TestTableTerminalNeverLeft(t *testing.T) {
	for _, r := range tasks.Table {
		if r.From.Terminal() && (r.To != r.From || !r.Internal) {
			t.Errorf("row %s/%s leaves terminal %s for %s", r.From, r.Event, r.From, r.To)
		}
		if r.Internal && r.To != r.From {
			t.Errorf("internal row %s/%s changes state to %s", r.From, r.Event, r.To)
		}
	}
}

// TestTableEveryLiveStateEnds: each non-terminal state has a cancel, an
// expiry and a dispose row to a terminal state, so no task outlives its
// TTL or the engine, and every state is reachable from Initial.
func TestTableEveryLiveStateEnds(t *testing.T) {
	reach := map[tasks.State]bool{tasks.Initial: true}
	for changed := true; changed; {
		changed = false
		for _, r := range tasks.Table {
			if reach[r.From] && !reach[r.To] {
				reach[r.To], changed = true, true
			}
		}
	}
	for _, s := range tasks.States {
		if !reach[s] {
			t.Errorf("%s is unreachable from %s", s, tasks.Initial)
		}
		if s.Terminal() {
			continue
		}
		for _, ev := range []tasks.Event{tasks.Cancel, tasks.Expired, tasks.Dispose, tasks.Lost, tasks.Returned} {
			for _, f := range allFacts() {
				r, err := tasks.Resolve(s, ev, f)
				if err != nil {
					t.Errorf("%s/%s %+v: %v", s, ev, f, err)
					continue
				}
				if ev != tasks.Lost && ev != tasks.Returned && !r.To.Terminal() {
					t.Errorf("%s/%s ends in %s, not a terminal state", s, ev, r.To)
				}
			}
		}
	}
}

// TestTableLostNeverSilent is T2/T5 as data: a lost call that Call does
// not send again fails with the outcome-unknown reason from every live
// state; only a call being re-sent stays working, and never one that
// asked the host.
func TestTableLostNeverSilent(t *testing.T) {
	for _, s := range []tasks.State{tasks.Working, tasks.InputRequired} {
		for _, f := range allFacts() {
			r, err := tasks.Resolve(s, tasks.Lost, f)
			if err != nil {
				t.Fatal(err)
			}
			replay := s == tasks.Working && f.Resending
			if replay {
				if r.To != tasks.Working {
					t.Errorf("%s/lost %+v -> %s, want working (re-sent once)", s, f, r.To)
				}
				continue
			}
			if r.To != tasks.Failed || !strings.Contains(r.Message, "outcome is unknown") {
				t.Errorf("%s/lost %+v -> %s %q, want failed with the outcome-unknown reason", s, f, r.To, r.Message)
			}
		}
	}
}

// TestTableCompletedOnlyFromAnswer is T3: the only rows into completed
// are returned with a tool result.
func TestTableCompletedOnlyFromAnswer(t *testing.T) {
	for _, r := range tasks.Table {
		if r.To == tasks.Completed && r.From != tasks.Completed && (r.Event != tasks.Returned || r.Guard.Key != tasks.Answered.Key) {
			t.Errorf("row %s/%s [%s] enters completed", r.From, r.Event, r.Guard.Key)
		}
	}
}

// TestTableNamesRoundTrip: state and event names parse back, and the
// states are spelled as the extension's status field.
func TestTableNamesRoundTrip(t *testing.T) {
	want := []string{"working", "input_required", "completed", "failed", "cancelled"}
	for i, s := range tasks.States {
		if s.String() != want[i] {
			t.Errorf("state %d is %q, want %q", i, s, want[i])
		}
		if p, ok := tasks.ParseState(s.String()); !ok || p != s {
			t.Errorf("ParseState(%q) = %v, %v", s, p, ok)
		}
	}
	for _, ev := range tasks.Events {
		if p, ok := tasks.ParseEvent(ev.String()); !ok || p != ev {
			t.Errorf("ParseEvent(%q) = %v, %v", ev, p, ok)
		}
	}
	if _, err := tasks.Resolve(tasks.Completed, tasks.InputAnswered, tasks.Facts{}); !errors.Is(err, tasks.ErrNotDeclared) {
		t.Errorf("completed/input_answered: %v, want ErrNotDeclared", err)
	}
}

// TestRenderings: every row is an edge in DOT and Mermaid.
func TestRenderings(t *testing.T) {
	dot, mmd := tasks.DOT(), tasks.Mermaid()
	if got := strings.Count(dot, " -> "); got != len(tasks.Table)+1 {
		t.Errorf("DOT has %d edges, want %d", got, len(tasks.Table)+1)
	}
	if got := strings.Count(mmd, " --> "); got != len(tasks.Table)+1+3 {
		t.Errorf("Mermaid has %d arrows, want %d", got, len(tasks.Table)+4)
	}
}
