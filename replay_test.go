package mcpkeep

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
)

// TestReplayTraces replays every recorded trace of testdata/traces at both
// levels: the FSM (trace.Check: the declaration and the structural
// invariants) and the supervisor (the real Supervisor on the rebuilt
// inputs must produce the same trace; see replay_helpers_test.go).
func TestReplayTraces(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "traces", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 8 {
		t.Fatalf("want the 8 recorded traces in testdata/traces, found %d", len(paths))
	}
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.Check(bytes.NewReader(raw)); err != nil {
				t.Fatalf("FSM level: %s:%v", path, err)
			}
			h, recorded := replayReadFile(t, path)
			plan, err := planReplay(h, recorded)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			synctest.Test(t, func(t *testing.T) {
				produced, file := replaySupervisor(t, plan)
				if diff := diffReplay(recorded, produced, replayTolerance); diff != "" {
					t.Errorf("supervisor replay of %s differs (-recorded +produced; t is the gap to the previous event):\n%s", path, diff)
				}
				t.Logf("%d events replayed; largest gap difference %s", len(produced), replayMaxSkew(recorded, produced))
				// The produced trace checks too, exactly (mock clock, no slack).
				if err := trace.Check(bytes.NewReader(file)); err != nil {
					t.Errorf("produced trace: %v\n%s", err, file)
				}
			})
		})
	}
}

// TestReplayRoundTrip: a trace produced on the mock clock replays onto
// itself with zero tolerance, so the mapping adds no error of its own.
func TestReplayRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "traces", "*.jsonl"))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, recorded := replayReadFile(t, path)
			plan, err := planReplay(h, recorded)
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			synctest.Test(t, func(t *testing.T) { _, first = replaySupervisor(t, plan) })
			mh, mock, err := trace.Read(bytes.NewReader(first))
			if err != nil {
				t.Fatal(err)
			}
			plan2, err := planReplay(mh, mock)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				again, _ := replaySupervisor(t, plan2)
				if diff := diffReplay(mock, again, 0); diff != "" {
					t.Errorf("mock trace does not replay exactly (-first +second):\n%s", diff)
				}
			})
		})
	}
}

// TestReplayCatchesLateTimer: a trace the FSM accepts (timers may fire
// late) but whose retry fired 2 s after it was due does not match what the
// supervisor does with that policy.
func TestReplayCatchesLateTimer(t *testing.T) {
	h, recorded := replayReadFile(t, filepath.Join("testdata", "traces", "crash-recovered.jsonl"))
	late := append([]trace.Event(nil), recorded...)
	shifted := 0
	for i := range late {
		if late[i].Gen == 2 {
			late[i].Offset += 2 * time.Second
			shifted++
		}
	}
	if shifted == 0 {
		t.Fatal("no gen 2 in crash-recovered")
	}
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, h)
	for _, e := range late {
		w.Write(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := trace.Check(&buf); err != nil {
		t.Fatalf("FSM level rejects the late trace: %v", err)
	}
	plan, err := planReplay(h, late)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		produced, _ := replaySupervisor(t, plan)
		diff := diffReplay(late, produced, replayTolerance)
		if !strings.Contains(diff, "Offset") {
			t.Errorf("a retry 2 s late replays as a match; diff:\n%s", diff)
		}
	})
}

// TestPlanReplayRejects: what the replay cannot rebuild is refused with a
// reason instead of being replayed wrongly.
func TestPlanReplayRejects(t *testing.T) {
	h, recorded := replayReadFile(t, filepath.Join("testdata", "traces", "crash-recovered.jsonl"))
	for name, evs := range map[string][]trace.Event{
		"empty":             nil,
		"starts mid-run":    recorded[1:],
		"two servers":       append(append([]trace.Event(nil), recorded[:1]...), trace.Event{Server: "other", Gen: 1, Event: fsm.Connected, From: fsm.Connecting, To: fsm.Established}),
		"connecting notify": {{Server: "fixture", Gen: 1, Event: fsm.ToolsChanged, From: fsm.Connecting, To: fsm.Connecting}},
	} {
		if _, err := planReplay(h, evs); err == nil {
			t.Errorf("%s: planned", name)
		}
	}
}

// maxSkew is the largest difference between recorded and produced gaps.
func replayMaxSkew(recorded, produced []trace.Event) time.Duration {
	var worst time.Duration
	a, b := replayComparable(recorded), replayComparable(produced)
	for i := range min(len(a), len(b)) {
		d := a[i].Offset - b[i].Offset
		worst = max(worst, d, -d)
	}
	return worst
}
