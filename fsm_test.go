package mcpkeep

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// raceRow is one row of the race table (DESIGN §7). Each row runs inside
// a synctest bubble with a mock clock; the harness checks I1–I6 after
// every step, and each row asserts its transition sequence, its lifecycle
// logs and its registrations, then disposes to quiescence.
type raceRow struct {
	race  string
	name  string
	opts  func(*Options)
	tools []string
	fault func(gen uint64) transport.Fault
	// run drives the row after Start; startErr is what Start returned.
	run       func(t *testing.T, h *harness, startErr error)
	wantSteps []string
	wantLogs  []string
	// wantTools is the registration after run (before dispose).
	wantTools []string
	// noStart: run calls Start itself (a row racing Start).
	noStart bool
	// disposeErr is what the final Dispose must return.
	disposeErr error
}

const (
	cEst   = "connecting -connected-> established"
	cFail  = "connecting -failed-> lost"
	cDisp  = "connecting -dispose-> draining"
	cTC    = "connecting -tools_changed-> connecting"
	eLost  = "established -closed-> lost"
	eTC    = "established -tools_changed-> established"
	eStab  = "established -stable-> established"
	eRec   = "established -reconnect-> lost"
	eDisp  = "established -dispose-> draining"
	lBack  = "lost -released-> backing-off"
	lExh   = "lost -released-> exhausted"
	lStuck = "lost -stuck-> exhausted"
	lDisp  = "lost -dispose-> draining"
	bRetry = "backing-off -retry_due-> connecting"
	bRec   = "backing-off -reconnect-> connecting"
	bDisp  = "backing-off -dispose-> draining"
	xRec   = "exhausted -reconnect-> connecting"
	xDisp  = "exhausted -dispose-> draining"
	dDone  = "draining -drained-> disposed"
	dTime  = "draining -drain_timeout-> disposed"
)

var errBoom = errors.New("boom")

func failFrom(n uint64, f transport.Fault) func(uint64) transport.Fault {
	return func(gen uint64) transport.Fault {
		if gen >= n {
			return f
		}
		return transport.Fault{}
	}
}

func onlyGen(n uint64, f transport.Fault) func(uint64) transport.Fault {
	return func(gen uint64) transport.Fault {
		if gen == n {
			return f
		}
		return transport.Fault{}
	}
}

func callEcho(t *testing.T, h *harness) {
	t.Helper()
	res, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("call echo: %v %+v", err, res)
	}
}

var raceTable = []raceRow{
	{
		race: "R1", name: "crash then recovery serves calls",
		run: func(t *testing.T, h *harness, _ error) {
			callEcho(t, h)
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			if got := h.registered(); len(got) != 2 {
				t.Fatalf("tools must stay registered during the outage, got %v", got)
			}
			h.advance(time.Second)
			h.wantState(fsm.Established)
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R2", name: "failed attempt logs connection failed, lost session logs connection lost",
		fault: onlyGen(1, transport.Fault{ConnectErr: errBoom}),
		run: func(t *testing.T, h *harness, _ error) {
			h.wantState(fsm.BackingOff)
			h.advance(time.Second)
			h.wantState(fsm.Established)
			h.mem.Gen(2).Kill()
			h.settle()
			h.advance(2 * time.Second) // retry 2 (no stability reset in between)
			h.wantState(fsm.Established)
			f := h.logsNamed("connection failed")[0]
			if f.Attrs["server"] != "srv" || f.Attrs["gen"] != "1" || f.Attrs["err"] == "" {
				t.Fatalf("connection failed attrs: %v", f.Attrs)
			}
			l := h.logsNamed("connection lost")[0]
			if l.Attrs["gen"] != "2" {
				t.Fatalf("connection lost attrs: %v", l.Attrs)
			}
			r := h.logsNamed("reconnecting")
			if r[0].Attrs["attempt"] != "1" || r[0].Attrs["max_attempts"] != "4" || r[0].Attrs["delay"] != "1s" ||
				r[1].Attrs["attempt"] != "2" || r[1].Attrs["delay"] != "2s" {
				t.Fatalf("reconnecting attrs: %v / %v", r[0].Attrs, r[1].Attrs)
			}
		},
		wantSteps: []string{cFail, lBack, bRetry, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection failed", "reconnecting", "recovered", "connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R3", name: "strict startup registration survives a pre-connect list_changed",
		opts:    func(o *Options) { o.FailOnStartupError = true },
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			gate := make(chan struct{}) // made in the bubble: blocking on it is durable
			h.mem.Fault = onlyGen(1, transport.Fault{Gate: gate})
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Start(context.Background()) }()
			h.settle()
			h.wantState(fsm.Connecting)
			// A list_changed of gen 1 before its handshake completed.
			h.sup.send(message{kind: mToolsChanged, gen: 1})
			h.settle()
			close(gate)
			h.settle()
			if err := <-errc; err != nil {
				t.Fatalf("strict Start failed: %v", err)
			}
			h.wantState(fsm.Established)
			if total, _ := h.mem.Gen(1).Lists(); total != 2 {
				t.Fatalf("tools/list calls = %d, want 2 (activation + the dirty re-sync)", total)
			}
		},
		wantSteps: []string{cTC, cEst, eDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
}

func TestRaceTable(t *testing.T) {
	for _, row := range raceTable {
		t.Run(row.race+"/"+row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runRow(t, row) })
		})
	}
}

func runRow(t *testing.T, row raceRow) {
	h := newHarness(t, func(o *Options) {
		if row.opts != nil {
			row.opts(o)
		}
	}, row.tools...)
	if row.fault != nil {
		h.mem.Fault = row.fault
	}
	var startErr error
	if !row.noStart {
		startErr = h.start()
	}
	row.run(t, h, startErr)
	h.settle()
	if row.wantTools != nil {
		if diff := cmp.Diff(row.wantTools, h.registered()); diff != "" {
			t.Fatalf("registered tools (-want +got):\n%s", diff)
		}
	}
	if err := h.dispose(); !errors.Is(err, row.disposeErr) && err != row.disposeErr {
		t.Fatalf("Dispose = %v, want %v", err, row.disposeErr)
	}
	h.wantState(fsm.Disposed)
	if diff := cmp.Diff(row.wantSteps, h.steps()); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if row.wantLogs != nil {
		if diff := cmp.Diff(row.wantLogs, h.messages()); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	}
	if got := h.registered(); len(got) != 0 {
		t.Errorf("disposed with tools %v", got)
	}
	_ = backoff.Default
}
