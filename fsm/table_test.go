package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// TestNames: String is exactly docs/design.md §3's spelling (the original
// events plus catalog_changed, the prompts and resources list_changed) and
// Parse inverts it.
func TestNames(t *testing.T) {
	states := []string{"connecting", "established", "lost", "backing-off", "exhausted", "draining", "disposed", "idle"}
	events := []string{"connected", "failed", "tools_changed", "dispose", "closed", "stable", "reconnect",
		"released", "stuck", "retry_due", "drained", "drain_timeout", "catalog_changed", "demand", "idle_timeout"}
	if len(fsm.States) != len(states) {
		t.Fatalf("%d states, docs/design.md §3 has %d", len(fsm.States), len(states))
	}
	for i, s := range fsm.States {
		if s.String() != states[i] {
			t.Errorf("States[%d].String() = %q, want %q", i, s, states[i])
		}
		if got, ok := fsm.ParseState(s.String()); !ok || got != s {
			t.Errorf("ParseState(%q) = %v, %v", s, got, ok)
		}
	}
	if len(fsm.Events) != len(events) {
		t.Fatalf("%d events, docs/design.md §3 has %d", len(fsm.Events), len(events))
	}
	for i, e := range fsm.Events {
		if e.String() != events[i] {
			t.Errorf("Events[%d].String() = %q, want %q", i, e, events[i])
		}
		if got, ok := fsm.ParseEvent(e.String()); !ok || got != e {
			t.Errorf("ParseEvent(%q) = %v, %v", e, got, ok)
		}
	}
	if got := fsm.State(42).String(); got != "state(42)" {
		t.Errorf("State(42).String() = %q", got)
	}
	if got := fsm.Event(42).String(); got != "event(42)" {
		t.Errorf("Event(42).String() = %q", got)
	}
	for _, bad := range []string{"", "Connecting", "backing_off", "state(1)"} {
		if _, ok := fsm.ParseState(bad); ok {
			t.Errorf("ParseState(%q) succeeded", bad)
		}
	}
	for _, bad := range []string{"", "Connected", "tools-changed", "drainTimeout"} {
		if _, ok := fsm.ParseEvent(bad); ok {
			t.Errorf("ParseEvent(%q) succeeded", bad)
		}
	}
}

// TestTableMatchesDesign pins fsm.Table to docs/design.md §3, row for row
// (the original table plus the currency guards on stable, stuck and retry_due:
// the guards are the only filter of stale signals).
func TestTableMatchesDesign(t *testing.T) {
	type row struct {
		from, event, guard, to string
		internal               bool
		log                    string
	}
	want := []row{
		{"connecting", "connected", "gen is current", "established", false, "recovered"},
		{"connecting", "failed", "gen is current ∧ first failure signal of gen", "lost", false, "connection failed"},
		{"connecting", "tools_changed", "gen is current", "connecting", true, ""},
		{"connecting", "catalog_changed", "gen is current", "connecting", true, ""},
		{"connecting", "dispose", "", "draining", false, ""},
		{"established", "closed", "gen is current", "lost", false, "connection lost"},
		{"established", "stable", "gen is current", "established", true, ""},
		{"established", "tools_changed", "gen is current", "established", true, ""},
		{"established", "catalog_changed", "gen is current", "established", true, ""},
		{"established", "idle_timeout", "gen is current ∧ closed to new calls ∧ nothing in flight ∧ no subscription", "lost", false, ""},
		{"established", "reconnect", "", "lost", false, ""},
		{"established", "dispose", "", "draining", false, ""},
		{"lost", "released", "reconnect enabled ∧ budget left", "backing-off", false, "reconnecting"},
		{"lost", "released", "reconnect enabled ∧ budget spent", "exhausted", false, "gave up"},
		{"lost", "released", "reconnect enabled ∧ sign-in required", "exhausted", false, "sign-in required"},
		{"lost", "released", "reconnect disabled", "exhausted", false, "reconnect disabled"},
		{"lost", "released", "stopping for idle", "idle", false, ""},
		{"lost", "stuck", "gen is current", "exhausted", false, ""},
		{"lost", "dispose", "", "draining", false, ""},
		{"backing-off", "retry_due", "timer is current", "connecting", false, ""},
		{"backing-off", "reconnect", "", "connecting", false, ""},
		{"backing-off", "dispose", "", "draining", false, ""},
		{"exhausted", "reconnect", "", "connecting", false, ""},
		{"exhausted", "dispose", "", "draining", false, ""},
		{"idle", "demand", "", "connecting", false, ""},
		{"idle", "reconnect", "", "connecting", false, ""},
		{"idle", "dispose", "", "draining", false, ""},
		{"draining", "drained", "", "disposed", false, ""},
		{"draining", "drain_timeout", "", "disposed", false, "incomplete shutdown"},
	}
	if len(fsm.Table) != len(want) {
		t.Fatalf("Table has %d rows, docs/design.md §3 has %d", len(fsm.Table), len(want))
	}
	for i, tr := range fsm.Table {
		got := row{tr.From.String(), tr.Event.String(), tr.Guard.Name, tr.To.String(), tr.Internal, tr.Log}
		if got != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got, want[i])
		}
	}
}

// TestTableWellFormed checks what every row must satisfy beyond its content.
func TestTableWellFormed(t *testing.T) {
	known := map[fsm.Invariant]bool{}
	for _, inv := range fsm.Invariants {
		known[inv.ID] = true
	}
	if len(known) != 7 {
		t.Errorf("%d distinct invariants, docs/design.md §4 has 7", len(known))
	}
	logs := map[string]bool{"connection failed": true, "connection lost": true, "reconnecting": true,
		"recovered": true, "gave up": true, "reconnect disabled": true, "incomplete shutdown": true, "sign-in required": true}
	for i, tr := range fsm.Table {
		if tr.Internal != (tr.From == tr.To) {
			t.Errorf("row %d (%s/%s): Internal=%v but %s -> %s", i, tr.From, tr.Event, tr.Internal, tr.From, tr.To)
		}
		if tr.Guard.Holds == nil {
			t.Errorf("row %d: guard %q has no predicate", i, tr.Guard.Name)
		}
		if len(tr.Carries) == 0 {
			t.Errorf("row %d (%s/%s) carries no invariant", i, tr.From, tr.Event)
		}
		for _, c := range tr.Carries {
			if !known[c] {
				t.Errorf("row %d carries unknown invariant %q", i, c)
			}
		}
		if tr.Log != "" && !logs[tr.Log] {
			t.Errorf("row %d logs %q, not a docs/design.md §10 message", i, tr.Log)
		}
		if tr.From == fsm.Disposed {
			t.Errorf("row %d leaves disposed", i)
		}
	}
}

// TestEveryRowFires: for each row and every Facts making its guard hold, a
// machine at row.From takes exactly that row.
func TestEveryRowFires(t *testing.T) {
	for i, row := range fsm.Table {
		held := 0
		for _, f := range allFacts() {
			if !row.Guard.Holds(f) {
				continue
			}
			held++
			m := fsm.NewAt(row.From)
			got, err := fire(t, m, row.Event, f)
			if err != nil {
				t.Errorf("row %d %s/%s with %+v: %v", i, row.From, row.Event, f, err)
				continue
			}
			if !sameRow(got, row) {
				t.Errorf("row %d %s/%s with %+v took %s -[%s]-> %s", i, row.From, row.Event, f, got.From, got.Guard.Name, got.To)
			}
			if m.State() != row.To {
				t.Errorf("row %d: state %s after firing, want %s", i, m.State(), row.To)
			}
		}
		if held == 0 {
			t.Errorf("row %d %s/%s: guard %q holds for no Facts", i, row.From, row.Event, row.Guard.Name)
		}
	}
}

// TestUndeclaredRejected: every (state, event) without a row is rejected
// with ErrNotDeclared for every Facts, and the state does not move.
func TestUndeclaredRejected(t *testing.T) {
	rejected := 0
	for _, s := range fsm.States {
		for _, ev := range fsm.Events {
			if len(fsm.Rows(s, ev)) > 0 {
				continue
			}
			m := fsm.NewAt(s)
			if m.Can(ev) {
				t.Errorf("Can(%s) in %s = true for an undeclared pair", ev, s)
			}
			for _, f := range allFacts() {
				_, err := fire(t, m, ev, f)
				if !errors.Is(err, fsm.ErrNotDeclared) {
					t.Errorf("%s/%s with %+v: err = %v, want ErrNotDeclared", s, ev, f, err)
				}
				if m.State() != s {
					t.Fatalf("%s/%s moved the machine to %s", s, ev, m.State())
				}
			}
			rejected++
		}
	}
	// 8 states × 15 events = 120 pairs, 25 of them declared (29 rows).
	if want := len(fsm.States)*len(fsm.Events) - 25; rejected != want {
		t.Errorf("%d undeclared pairs checked, want %d", rejected, want)
	}
}

// TestGuardRejected: an event of a stale generation, or a second failure
// signal, matches no row (I7): ErrGuardRejected and no state change.
func TestGuardRejected(t *testing.T) {
	cases := []struct {
		from  fsm.State
		event fsm.Event
		facts fsm.Facts
	}{
		{fsm.Connecting, fsm.Connected, fsm.Facts{Stale: true}},
		{fsm.Connecting, fsm.Failed, fsm.Facts{Stale: true}},
		{fsm.Connecting, fsm.Failed, fsm.Facts{Repeated: true}},
		{fsm.Connecting, fsm.Failed, fsm.Facts{Stale: true, Repeated: true}},
		{fsm.Connecting, fsm.ToolsChanged, fsm.Facts{Stale: true}},
		{fsm.Established, fsm.Closed, fsm.Facts{Stale: true}},
		{fsm.Established, fsm.ToolsChanged, fsm.Facts{Stale: true}},
	}
	for _, c := range cases {
		m := fsm.NewAt(c.from)
		_, err := fire(t, m, c.event, c.facts)
		if !errors.Is(err, fsm.ErrGuardRejected) {
			t.Errorf("%s/%s with %+v: err = %v, want ErrGuardRejected", c.from, c.event, c.facts, err)
		}
		var ee *fsm.EventError
		if errors.As(err, &ee) && (ee.State != c.from || ee.Event != c.event || ee.Facts != c.facts) {
			t.Errorf("EventError = %+v, want state %s event %s facts %+v", ee, c.from, c.event, c.facts)
		}
		if err != nil && !strings.Contains(err.Error(), c.from.String()) {
			t.Errorf("error %q does not name the state", err)
		}
		if m.State() != c.from {
			t.Errorf("%s/%s with %+v moved to %s", c.from, c.event, c.facts, m.State())
		}
	}
}

// TestDisposedAbsorbing: nothing at all leaves disposed.
func TestDisposedAbsorbing(t *testing.T) {
	m := fsm.NewAt(fsm.Disposed)
	for _, ev := range fsm.Events {
		if m.Can(ev) {
			t.Errorf("Can(%s) in disposed", ev)
		}
		for _, f := range allFacts() {
			if _, err := fire(t, m, ev, f); err == nil {
				t.Errorf("%s fired in disposed", ev)
			}
			if m.State() != fsm.Disposed {
				t.Fatalf("%s left disposed for %s", ev, m.State())
			}
		}
	}
	if !fsm.Disposed.Terminal() {
		t.Error("disposed is not Terminal")
	}
	for _, s := range fsm.States {
		if s != fsm.Disposed && s.Terminal() {
			t.Errorf("%s is Terminal", s)
		}
	}
}

// TestExactlyOneGuard: where rows share (from, event), exactly one guard
// holds for each of the 256 Facts combinations; Resolve is never ambiguous.
func TestExactlyOneGuard(t *testing.T) {
	shared := 0
	for _, s := range fsm.States {
		for _, ev := range fsm.Events {
			rows := fsm.Rows(s, ev)
			if len(rows) > 1 {
				shared++
				for _, f := range allFacts() {
					var holding []string
					for _, r := range rows {
						if r.Guard.Holds(f) {
							holding = append(holding, r.Guard.Name)
						}
					}
					if len(holding) != 1 {
						t.Errorf("%s/%s with %+v: guards holding %q, want exactly one", s, ev, f, holding)
					}
				}
			}
			for _, f := range allFacts() {
				if _, err := fsm.Resolve(s, ev, f); errors.Is(err, fsm.ErrAmbiguous) {
					t.Errorf("Resolve(%s, %s, %+v) is ambiguous", s, ev, f)
				}
			}
		}
	}
	if shared != 1 { // lost/released: budget left, budget spent, reconnect disabled
		t.Errorf("%d (state, event) pairs with several rows, want 1", shared)
	}
}

// TestReachability explores the machine itself (every event, every Facts):
// every state is reachable from connecting, and disposed from every state.
func TestReachability(t *testing.T) {
	// next[s] is the set of states one successful Fire away from s.
	next := map[fsm.State]map[fsm.State]bool{}
	for _, s := range fsm.States {
		next[s] = map[fsm.State]bool{}
		for _, ev := range fsm.Events {
			for _, f := range allFacts() {
				m := fsm.NewAt(s)
				if _, err := fire(t, m, ev, f); err == nil {
					next[s][m.State()] = true
				}
			}
		}
	}
	reach := func(from fsm.State) map[fsm.State]bool {
		seen := map[fsm.State]bool{from: true}
		queue := []fsm.State{from}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for n := range next[s] {
				if !seen[n] {
					seen[n] = true
					queue = append(queue, n)
				}
			}
		}
		return seen
	}
	fromStart := reach(fsm.Initial)
	for _, s := range fsm.States {
		if !fromStart[s] {
			t.Errorf("%s is unreachable from %s", s, fsm.Initial)
		}
		if !reach(s)[fsm.Disposed] {
			t.Errorf("disposed is unreachable from %s", s)
		}
	}
	if len(next[fsm.Disposed]) != 0 {
		t.Errorf("disposed has successors %v", next[fsm.Disposed])
	}
}

func TestNewAtAndCan(t *testing.T) {
	if got := fsm.New().State(); got != fsm.Connecting {
		t.Errorf("New().State() = %s, want connecting", got)
	}
	for _, s := range fsm.States {
		m := fsm.NewAt(s)
		if m.State() != s || fsm.LooplabState(m) != s.String() {
			t.Errorf("NewAt(%s): state %s, looplab %s", s, m.State(), fsm.LooplabState(m))
		}
		for _, ev := range fsm.Events {
			if got, want := m.Can(ev), len(fsm.Rows(s, ev)) > 0; got != want {
				t.Errorf("%s: Can(%s) = %v, want %v", s, ev, got, want)
			}
		}
		// Out-of-range events are never declared (and must not alias
		// another state's row in the compiled index).
		for ev := fsm.Event(len(fsm.Events)); ev < 100; ev++ {
			if m.Can(ev) {
				t.Errorf("%s: Can(%d) = true", s, ev)
			}
			if _, err := m.Fire(ev, fsm.Facts{}); !errors.Is(err, fsm.ErrNotDeclared) {
				t.Errorf("%s: Fire(%d) err = %v, want ErrNotDeclared", s, ev, err)
			}
		}
	}
}

// TestFind: replay recovers a row from (from, event, to). Where two rows
// share all three (lost -released-> exhausted, by budget or by policy),
// Find returns the first declared one.
func TestFind(t *testing.T) {
	for i, row := range fsm.Table {
		got, ok := fsm.Find(row.From, row.Event, row.To)
		if !ok || got.From != row.From || got.Event != row.Event || got.To != row.To {
			t.Errorf("Find for row %d = %+v, %v", i, got, ok)
		}
		if idx := rowIndex(got); idx > i {
			t.Errorf("Find for row %d returned later row %d", i, idx)
		}
	}
	if _, ok := fsm.Find(fsm.Disposed, fsm.Reconnect, fsm.Connecting); ok {
		t.Error("Find(disposed, reconnect, connecting) found a row")
	}
	if _, ok := fsm.Find(fsm.Lost, fsm.Released, fsm.Connecting); ok {
		t.Error("Find(lost, released, connecting) found a row")
	}
}
