package mcpkeep

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The race rows of the idle stop's admission and of its flags on every
// path out of lost (docs/design.md §7, §20), run by TestRaceTable and
// counted by TestEveryGuardRejects.
func init() { raceTable = append(raceTable, idleStopRows...) }

// slowTool adds to each generation's server a tool "slow" that reports
// its generation on reached and answers once release is closed.
type slowTool struct {
	reached chan uint64
	release chan struct{}
}

func newSlowTool() *slowTool {
	return &slowTool{reached: make(chan uint64, 8), release: make(chan struct{})}
}

func (s *slowTool) serve(gen uint64, srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.reached <- gen
			select {
			case <-s.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil
		})
}

var idleStopRows = []raceRow{
	func() raceRow {
		var slow *slowTool
		return raceRow{
			race: "R49", name: "an idle stop closes the generation to new calls before it decides: a call that starts meanwhile waits for the next generation",
			opts:  func(o *Options) { slow = newSlowTool(); o.IdleStop = minute },
			serve: func(gen uint64, s *mcp.Server) { slow.serve(gen, s) },
			run: func(t *testing.T, h *harness, _ error) {
				done := make(chan callResult, 1)
				fired := false
				h.sup.testHooks = &testHooks{idleStop: func() {
					if fired {
						return
					}
					fired = true
					// A call that starts after the guard read the
					// server as quiet, before the generation ends.
					go func() {
						res, err := h.sup.Call(context.Background(), "slow", nil, nil)
						done <- callResult{res, err}
					}()
					select {
					case <-slow.reached: // sent to the server being stopped
					case <-time.After(time.Second): // held (the bubble's time)
					}
				}}
				h.advance(minute)
				select {
				case r := <-done:
					t.Fatalf("the call that started during the idle stop was cut: %v", r.err)
				case gen := <-slow.reached:
					if gen != 2 {
						t.Fatalf("the call reached gen %d, want the next generation (2)", gen)
					}
				}
				close(slow.release)
				if r := <-done; r.err != nil || r.res.IsError {
					t.Fatalf("call: %v %+v", r.err, r.res)
				}
				h.wantState(fsm.Established)
			},
			wantSteps: []string{cEst, eStab, eIdle, lIdle, iDem, cEst, eDisp, dDone},
			wantLogs:  []string{},
		}
	}(),
	func() raceRow {
		var slow *slowTool
		return raceRow{
			race: "R53", name: "a call that starts as the idle stop closes the generation backs the stop out, and the same server serves it",
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
					// Counted (useBegin) after the close, before the
					// guard reads what is in flight: it waits at the gate.
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
				h.advance(minute)
				if gen := <-slow.reached; gen != 1 {
					t.Fatalf("the call reached gen %d, want 1 (the stop backed out)", gen)
				}
				h.wantState(fsm.Established)
				if n := h.sup.Stats().Rejected[fsm.Quiet.Key]; n != 1 {
					t.Fatalf("quiet refused %d times, want 1", n)
				}
				close(slow.release)
				if r := <-done; r.err != nil || r.res.IsError {
					t.Fatalf("call: %v %+v", r.err, r.res)
				}
			},
			wantSteps: []string{cEst, eStab, eDisp, dDone},
			wantLogs:  []string{},
		}
	}(),
	{
		race: "R50", name: "a generation that served until a clean idle stop resets the budget: outages apart do not add up",
		opts: idleAfter(2 * time.Second), // under the stability window (4 s)
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.advance(time.Second) // retry 1
			h.wantState(fsm.Established)
			h.advance(2 * time.Second) // the idle stop, before the stability window
			h.wantState(fsm.Idle)
			if a := h.sup.State().Attempt; a != 0 {
				t.Fatalf("attempt %d after a clean idle stop, want 0 (the budget reset)", a)
			}
			callEcho(t, h)
			h.settle() // the lists that follow the demand start's call
			h.mem.Gen(3).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			r := h.logsNamed("reconnecting")
			if len(r) != 2 || r[1].Attrs["attempt"] != "1" || r[1].Attrs["delay"] != "1s" {
				t.Fatalf("the second outage's retry: %v; want attempt 1 after 1s", r)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eIdle, lIdle, iDem, cEst, eLost, lBack, bDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered", "connection lost", "reconnecting"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R51", name: "dispose during an idle stop's barrier clears the idle flags; a call waiting for it fails when Dispose returns",
		opts:  idleAfter(minute),
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			h.advance(minute)
			h.wantState(fsm.Lost)
			call := goCall(h, "echo", nil)
			h.settle()
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Dispose(context.Background()) }()
			h.settle()
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			if err := <-errc; err != nil {
				t.Fatalf("Dispose: %v", err)
			}
			if snap := h.sup.State(); snap.IdleStopping {
				t.Fatalf("disposed snapshot still says stopping for idle: %+v", snap)
			}
			if r := resultOf(t, call); !errors.Is(r.err, ErrNotConnected) {
				t.Fatalf("call waiting for the idle stop when disposed: %v, want not connected", r.err)
			}
		},
		wantSteps: []string{cEst, eStab, eIdle, lDisp, dDone},
		wantLogs:  []string{},
	},
	{
		race: "R52", name: "an idle stop whose barrier goes stuck clears the idle flags: after a manual reconnect a crash is an outage, an idle stop is one",
		opts:  idleAfter(minute),
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			h.advance(minute)
			h.wantState(fsm.Lost)
			call := goCall(h, "echo", nil) // a demand during the barrier
			h.settle()
			h.advance(3 * time.Second) // the termination window: stuck
			h.wantState(fsm.Exhausted)
			if snap := h.sup.State(); snap.IdleStopping {
				t.Fatalf("exhausted snapshot still says stopping for idle: %+v", snap)
			}
			if r := resultOf(t, call); !errors.Is(r.err, ErrExhausted) {
				t.Fatalf("call waiting for the stuck idle stop: %v, want exhausted at once", r.err)
			}
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established)
			h.mem.Gen(2).Kill()
			h.settle()
			h.wantState(fsm.BackingOff) // an outage: retry, backoff, budget
			h.advance(time.Second)
			h.wantState(fsm.Established)
			h.advance(minute) // a clean idle stop ends in idle, not connecting
			h.wantState(fsm.Idle)
		},
		wantSteps: []string{cEst, eStab, eIdle, lStuck, xRec, cEst, eLost, lBack, bRetry, cEst, eStab, eIdle, lIdle, iDisp, dDone},
		wantLogs:  []string{"gave up", "recovered", "connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
}
