package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// Race rows R38 (docs/design.md §25): a task's call runs through
// CallRaw like the relay's, so safe replay (§21) decides what a lost
// server means for the task. The rows use replayTools (race_replay_test.go):
// look is readOnlyHint, write has no hints, and the listed generations
// hang their calls.

// taskEngine is an engine on the row's clock whose runner calls tool on
// the row's supervisor, telling the task when Call re-sends it.
func taskEngine(t *testing.T, h *harness) *tasks.Engine {
	t.Helper()
	e, err := tasks.New(tasks.Options{Clock: h.clk, DefaultTTL: time.Hour,
		IsLost: func(err error) bool { return errors.Is(err, ErrConnectionLost) }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func taskOf(t *testing.T, h *harness, e *tasks.Engine, tool string) tasks.Record {
	t.Helper()
	rec, err := e.Create(tasks.Spec{Owner: "host", Server: "s", Tool: tool,
		Run: func(ctx context.Context, hk tasks.Hooks) (json.RawMessage, error) {
			return h.sup.CallRaw(WithReplayNotice(ctx, hk.Resending), tool, nil, nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func taskNow(t *testing.T, e *tasks.Engine, id string) tasks.Record {
	t.Helper()
	rec, err := e.Get(context.Background(), "host", id)
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return rec
}

func closeEngine(t *testing.T, e *tasks.Engine) {
	t.Helper()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func init() {
	rows := []raceRow{
		replayRow("a task's replay-safe call lost with its server: re-sent on the next generation, the task stays working, then completes (one run there)",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				e := taskEngine(t, h)
				defer closeEngine(t, e)
				look := taskOf(t, h, e, "look")
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				if got := taskNow(t, e, look.ID); got.Status != tasks.Working || got.StatusMessage != tasks.MessageResending {
					t.Fatalf("during the outage: %s %q, want working, re-sending", got.Status, got.StatusMessage)
				}
				h.advance(time.Second) // the retry: gen 2
				h.wantState(fsm.Established)
				got := taskNow(t, e, look.ID)
				if got.Status != tasks.Completed || !strings.Contains(string(got.Result), "look on gen 2") {
					t.Fatalf("after the replay: %s %s", got.Status, got.Result)
				}
				if r.got(1, "look") != 1 || r.got(2, "look") != 1 {
					t.Fatalf("look ran %d times on gen 1, %d on gen 2; want 1 and 1", r.got(1, "look"), r.got(2, "look"))
				}
			}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("a task's non-hinted call lost with its server: failed, outcome unknown, never run again",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				e := taskEngine(t, h)
				defer closeEngine(t, e)
				write := taskOf(t, h, e, "write")
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				got := taskNow(t, e, write.ID)
				if got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonOutcomeUnknown || got.Error == nil {
					t.Fatalf("after the loss: %s %q %+v", got.Status, got.StatusMessage, got.Error)
				}
				h.advance(time.Second)
				h.wantState(fsm.Established)
				if r.got(1, "write") != 1 || r.got(2, "write") != 0 {
					t.Fatalf("write ran %d times on gen 1, %d on gen 2; want 1 and 0", r.got(1, "write"), r.got(2, "write"))
				}
				if got := taskNow(t, e, write.ID); got.Status != tasks.Failed {
					t.Fatalf("later: %s", got.Status)
				}
			}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("a cancel during a task's replay: cancelled, and the replay is never sent",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				e := taskEngine(t, h)
				defer closeEngine(t, e)
				look := taskOf(t, h, e, "look")
				h.settle()
				h.mem.Gen(1).Kill()
				h.settle()
				got, err := e.Cancel(context.Background(), "host", look.ID)
				if err != nil || got.Status != tasks.Cancelled {
					t.Fatalf("cancel: %+v, %v", got, err)
				}
				h.settle()
				h.advance(time.Second)
				h.wantState(fsm.Established)
				if r.got(2, "look") != 0 || h.sup.CallsReplayed() != 0 {
					t.Fatalf("gen 2 got %d calls, replayed %d; want none", r.got(2, "look"), h.sup.CallsReplayed())
				}
				if got := taskNow(t, e, look.ID); got.Status != tasks.Cancelled {
					t.Fatalf("later: %s", got.Status)
				}
			}, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone),

		replayRow("the task engine closed with tasks working: failed, the calls cancelled on the server",
			[]uint64{1}, nil, func(t *testing.T, h *harness, r *replayTools) {
				e := taskEngine(t, h)
				look, write := taskOf(t, h, e, "look"), taskOf(t, h, e, "write")
				h.settle()
				closeEngine(t, e)
				for _, id := range []string{look.ID, write.ID} {
					got := taskNow(t, e, id)
					if got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonDisposed {
						t.Fatalf("task %s: %s %q", got.Tool, got.Status, got.StatusMessage)
					}
				}
				h.settle()
				if r.got(1, "look") != 1 || r.got(1, "write") != 1 || h.sup.CallsReplayed() != 0 {
					t.Fatal("a call ran twice")
				}
			}, cEst, eDisp, dDone),
	}
	for _, r := range rows {
		r.race = "R38"
		raceTable = append(raceTable, r)
	}
}
