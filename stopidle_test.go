package mcpkeep

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The rows of a person's idle stop (StopIdle, docs/design.md §20, §28):
// the idle stop's row and guards, asked for now instead of by the timer.
func init() { raceTable = append(raceTable, stopIdleRows...) }

// wantStopErr checks that err is a *StopIdleError matching target, in
// state want.
func wantStopErr(t *testing.T, err, target error, want fsm.State) {
	t.Helper()
	var se *StopIdleError
	if !errors.Is(err, target) || !errors.As(err, &se) || se.State != want || se.Server != "srv" {
		t.Fatalf("StopIdle: %v, want a *StopIdleError matching %v in %s", err, target, want)
	}
}

var stopIdleRows = []raceRow{
	{
		race: "R54", name: "a person's idle stop: a quiet server stops at once (no window waited), catalog kept, budget untouched; the next call wakes it",
		opts: idleAfter(minute),
		run: func(t *testing.T, h *harness, _ error) {
			callEcho(t, h) // a request a moment ago: the timer would wait a minute
			if err := h.sup.StopIdle(context.Background()); err != nil {
				t.Fatalf("StopIdle of a quiet server: %v", err)
			}
			h.settle()
			h.wantState(fsm.Idle)
			if !h.mem.Gen(1).Terminated() || h.mem.Gen(1).Aborted() {
				t.Fatal("a stop for idleness must end a serving server with its stdin grace (Terminate)")
			}
			snap := h.sup.State()
			if snap.Attempt != 0 || snap.LastErr != nil || snap.Tools != 2 {
				t.Fatalf("after a person's idle stop: %+v", snap)
			}
			if l := h.logsNamed("idle stop"); len(l) != 1 || l[0].Attrs["by"] != "request" {
				t.Fatalf("idle stop logs: %v, want one by request", l)
			}
			// Idle now: nothing established to stop.
			wantStopErr(t, h.sup.StopIdle(context.Background()), ErrNotConnected, fsm.Idle)
			// The timer of the stopped generation was stopped with it.
			dropped := h.sup.Stats().Dropped
			h.advance(minute)
			if d := h.sup.Stats().Dropped; d != dropped {
				t.Fatalf("%d events dropped after the stop, want none (the stopped generation's idle timer fired?)", d-dropped)
			}
			callEcho(t, h)
			h.wantState(fsm.Established)
			wantCauses(t, h, StartStartup, StartDemand)
		},
		wantSteps: []string{cEst, eIdle, lIdle, iDem, cEst, eDisp, dDone},
		wantLogs:  []string{},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R55", name: "a person's idle stop with a request in flight backs out (ErrBusy); the request is served; once it ended the stop goes through",
		opts: idleAfter(minute),
		run: func(t *testing.T, h *harness, _ error) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := h.sup.Call(ctx, "hang", map[string]any{}, nil)
				done <- err
			}()
			h.settle()
			wantStopErr(t, h.sup.StopIdle(context.Background()), ErrBusy, fsm.Established)
			h.settle()
			h.wantState(fsm.Established)
			if n := h.sup.Stats().Rejected[fsm.Quiet.Key]; n != 1 {
				t.Fatalf("quiet refused %d times, want 1", n)
			}
			if g := h.sup.live.Load(); g == nil || g.n != 1 || !g.callsOpen() {
				t.Fatal("after the stop backed out gen 1 must take requests again")
			}
			callEcho(t, h) // served by the same generation
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the request in flight: %v, want its own cancellation (not a cut)", err)
			}
			h.settle()
			if err := h.sup.StopIdle(context.Background()); err != nil {
				t.Fatalf("StopIdle once the request ended: %v", err)
			}
			h.settle()
			h.wantState(fsm.Idle)
		},
		wantSteps: []string{cEst, eIdle, lIdle, iDisp, dDone},
		wantLogs:  []string{},
	},
	func() raceRow {
		var slow *slowTool
		return raceRow{
			race: "R56", name: "a call counted as a person's idle stop closes the generation backs the stop out, and the same server serves it",
			opts:  func(o *Options) { slow = newSlowTool(); o.IdleStop = minute },
			serve: func(gen uint64, s *mcp.Server) { slow.serve(gen, s) },
			run: func(t *testing.T, h *harness, _ error) {
				done := make(chan callResult, 1)
				fired := false
				h.sup.testHooks = &testHooks{idleClosed: func() {
					if fired {
						return
					}
					fired = true
					go func() {
						res, err := h.sup.Call(context.Background(), "slow", nil, nil)
						done <- callResult{res, err}
					}()
					select {
					case gen := <-slow.reached:
						t.Errorf("the call reached gen %d through a closed generation", gen)
					case <-time.After(time.Second): // held at the gate (the bubble's time)
					}
				}}
				wantStopErr(t, h.sup.StopIdle(context.Background()), ErrBusy, fsm.Established)
				if gen := <-slow.reached; gen != 1 {
					t.Fatalf("the call reached gen %d, want 1 (the stop backed out)", gen)
				}
				h.wantState(fsm.Established)
				close(slow.release)
				if r := <-done; r.err != nil || r.res.IsError {
					t.Fatalf("call: %v %+v", r.err, r.res)
				}
			},
			wantSteps: []string{cEst, eDisp, dDone},
			wantLogs:  []string{},
		}
	}(),
}

// TestStopIdleRefusals: a server without an idle stop, one not started
// and one disposed cannot be stopped for idleness; each says why, and
// nothing changes.
func TestStopIdleRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		wantStopErr(t, h.sup.StopIdle(context.Background()), ErrNotStarted, fsm.Connecting)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		wantStopErr(t, h.sup.StopIdle(context.Background()), ErrNotIdleable, fsm.Established)
		h.settle()
		h.wantState(fsm.Established)
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
		wantStopErr(t, h.sup.StopIdle(context.Background()), ErrDisposed, fsm.Disposed)
	})
}

// TestSnapshotInFlight: State counts the requests in flight, with an idle
// stop and without one (the live page's rows, docs/design.md §28), and
// says which servers may be stopped for idleness.
func TestSnapshotInFlight(t *testing.T) {
	for _, idle := range []time.Duration{0, minute} {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, idleAfter(idle))
			if err := h.start(); err != nil {
				t.Fatal(err)
			}
			if s := h.sup.State(); s.InFlight != 0 || s.IdleStop != idle {
				t.Fatalf("idle stop %v, nothing sent: %+v", idle, s)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := h.sup.Call(ctx, "hang", map[string]any{}, nil)
					done <- err
				}()
			}
			h.settle()
			if n := h.sup.State().InFlight; n != 2 {
				t.Fatalf("idle stop %v: %d requests in flight, want 2", idle, n)
			}
			cancel()
			<-done
			<-done
			callEcho(t, h)
			if n := h.sup.State().InFlight; n != 0 {
				t.Fatalf("idle stop %v: %d requests in flight after they ended, want 0", idle, n)
			}
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
