package mcpkeep

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// collapse compares transitions with runs of one step folded into one
	// (a storm's length is the SDK's business, its shape is ours).
	collapse bool
	// repeat runs the row this many times, each on a fresh supervisor (a
	// race the code before the fix lost only at random).
	repeat int
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
	{
		race: "R4", name: "a failed attempt waits for its close barrier before backing off",
		fault: onlyGen(1, transport.Fault{ConnectErr: errBoom, HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			h.wantState(fsm.Lost) // no barrier yet: no retry timer (I5 checked by settle)
			h.advance(2 * time.Second)
			h.wantState(fsm.Lost)
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			h.wantState(fsm.BackingOff)
			h.advance(time.Second)
			h.wantState(fsm.Established)
		},
		wantSteps: []string{cFail, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection failed", "reconnecting", "recovered"},
	},
	{
		race: "R4", name: "a barrier that never completes fails closed",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.Lost)
			h.advance(3 * time.Second) // the termination window
			h.wantState(fsm.Exhausted)
			if !errors.Is(h.sup.State().LastErr, ErrStuck) {
				t.Fatalf("LastErr = %v, want ErrStuck", h.sup.State().LastErr)
			}
			h.advance(time.Hour)
			if h.mem.Gen(2) != nil {
				t.Fatal("a second process was started while the first may live")
			}
		},
		wantSteps: []string{cEst, eLost, lStuck, xDisp, dTime},
		wantLogs:  []string{"connection lost", "gave up", "incomplete shutdown"},
		wantTools: []string{},
		// The stuck generation still holds its transport at dispose.
		disposeErr: ErrIncompleteShutdown,
	},
	{
		race: "R5", name: "dispose waits for the barrier",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Dispose(context.Background()) }()
			h.settle()
			h.wantState(fsm.Draining)
			select {
			case err := <-errc:
				t.Fatalf("Dispose returned %v before the barrier", err)
			default:
			}
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			if err := <-errc; err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		},
		wantSteps: []string{cEst, eDisp, dDone},
		wantLogs:  []string{},
	},
	{
		race: "R5", name: "dispose with a barrier that never completes is bounded",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Dispose(context.Background()) }()
			h.settle()
			h.advance(3 * time.Second)
			if err := <-errc; !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Dispose = %v, want ErrIncompleteShutdown", err)
			}
			if l := h.logsNamed("incomplete shutdown"); len(l) != 1 || l[0].Level != slog.LevelError {
				t.Fatalf("incomplete shutdown log: %+v", l)
			}
		},
		wantSteps:  []string{cEst, eDisp, dTime},
		wantLogs:   []string{"incomplete shutdown"},
		disposeErr: ErrIncompleteShutdown,
	},
	{
		race: "R6", name: "the budget cap unregisters tools and stops",
		fault: failFrom(2, transport.Fault{OpenErr: errBoom}),
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			for _, d := range []time.Duration{1, 2, 4, 4} {
				h.wantState(fsm.BackingOff)
				h.advance(d * time.Second)
			}
			h.wantState(fsm.Exhausted)
			if a := h.sup.State().Attempt; a != 4 {
				t.Fatalf("attempt = %d, want 4", a)
			}
			g := h.logsNamed("gave up")
			if len(g) != 1 || g[0].Attrs["attempt"] != "4" || g[0].Attrs["max_attempts"] != "4" {
				t.Fatalf("gave up: %+v", g)
			}
			h.advance(time.Hour)
			if h.mem.Gen(6) != nil {
				t.Fatal("retried after exhaustion")
			}
			_, err := h.sup.Call(context.Background(), "echo", nil, nil)
			if !errors.Is(err, ErrNotConnected) || !errors.Is(err, ErrExhausted) {
				t.Fatalf("call after exhaustion: %v", err)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lExh, xDisp, dDone},
		wantLogs: []string{"connection lost", "reconnecting", "connection failed", "reconnecting", "connection failed",
			"reconnecting", "connection failed", "reconnecting", "connection failed", "gave up"},
		wantTools: []string{},
	},
	{
		race: "R7", name: "dispose cancels a pending backoff",
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
			h.advance(time.Hour)
			if h.mem.Gen(2) != nil {
				t.Fatal("the cancelled retry still fired")
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bDisp, dDone},
	},
	{
		race: "R7", name: "dispose quiesces an in-flight sync",
		run: func(t *testing.T, h *harness, _ error) {
			g := h.mem.Gen(1)
			g.HoldLists()
			g.NotifyToolsChanged()
			h.settle()
			if _, inflight := g.Lists(); inflight != 1 {
				t.Fatalf("no sync in flight")
			}
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
		},
		wantSteps: []string{cEst, eTC, eDisp, dDone},
	},
	{
		race: "R8", name: "a close signal after dispose schedules nothing",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Dispose(context.Background()) }()
			h.settle()
			h.wantState(fsm.Draining)
			before := h.sup.Stats().Dropped
			h.mem.Gen(1).Kill() // the session ends during the drain
			h.sup.send(message{kind: mSessionEnded, gen: 1, err: errBoom})
			h.settle()
			h.wantState(fsm.Draining)
			if h.sup.Stats().Dropped <= before {
				t.Fatal("the close signal during the drain was not dropped")
			}
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			h.advance(time.Hour)
			if h.mem.Gen(2) != nil {
				t.Fatal("a generation was started after dispose")
			}
		},
		wantSteps: []string{cEst, eDisp, dDone},
		wantLogs:  []string{},
	},
	{
		race: "R9", name: "reconnect disabled keeps the tools and waits for a manual reconnect",
		opts: func(o *Options) { o.Policy.Enabled = false },
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.Exhausted)
			if got := h.registered(); len(got) != 2 {
				t.Fatalf("tools must stay registered with reconnect disabled: %v", got)
			}
			_, err := h.sup.Call(context.Background(), "echo", nil, nil)
			if !errors.Is(err, ErrExhausted) {
				t.Fatalf("call: %v", err)
			}
			h.advance(time.Hour)
			if h.mem.Gen(2) != nil {
				t.Fatal("reconnected by itself")
			}
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established)
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eLost, lExh, xRec, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnect disabled", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R10", name: "the stability window resets the budget: occasional crashes recover forever",
		run: func(t *testing.T, h *harness, _ error) {
			for i := uint64(1); i <= 10; i++ {
				h.mem.Gen(i).Kill()
				h.settle()
				h.wantState(fsm.BackingOff)
				if a := h.sup.State().Attempt; a != 1 {
					t.Fatalf("crash %d: attempt %d, want 1 (the budget was reset)", i, a)
				}
				h.advance(time.Second)
				h.wantState(fsm.Established)
				h.advance(4 * time.Second) // the stability window (= maxDelay)
				if a := h.sup.State().Attempt; a != 0 {
					t.Fatalf("after stability: attempt %d", a)
				}
			}
		},
		wantSteps: func() []string {
			out := []string{cEst}
			for range 10 {
				out = append(out, eLost, lBack, bRetry, cEst, eStab)
			}
			return append(out, eDisp, dDone)
		}(),
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R10", name: "a crash loop whose connects briefly succeed exhausts the budget",
		run: func(t *testing.T, h *harness, _ error) {
			delays := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
			for i, d := range delays {
				h.mem.Gen(uint64(i + 1)).Kill()
				h.settle()
				h.wantState(fsm.BackingOff)
				h.advance(d)
				h.wantState(fsm.Established)
				h.advance(3 * time.Second) // up, but shorter than the window
			}
			h.mem.Gen(5).Kill()
			h.settle()
			h.wantState(fsm.Exhausted)
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eLost, lBack, bRetry, cEst, eLost, lBack, bRetry, cEst,
			eLost, lBack, bRetry, cEst, eLost, lExh, xDisp, dDone},
		wantTools: []string{},
	},
	{
		race: "R11", name: "a connect timeout racing the attempt's own failure schedules exactly one retry",
		fault:   onlyGen(1, transport.Fault{Hang: true}),
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			started := h.startAsync()
			h.advance(5 * time.Second) // connect timeout: first failure signal
			if err := <-started; err != nil {
				t.Fatalf("non-strict Start = %v", err)
			}
			h.wantState(fsm.BackingOff)
			// The attempt's own error (ctx cancelled) arrived second and was dropped.
			if h.sup.Stats().Dropped == 0 {
				t.Fatal("the second failure signal was not counted")
			}
			if n := len(h.logsNamed("reconnecting")); n != 1 {
				t.Fatalf("%d retries scheduled, want 1", n)
			}
			// And a duplicate timeout for gen 1 is inert too.
			h.sup.send(message{kind: mConnectTimeout, gen: 1})
			h.settle()
			h.wantState(fsm.BackingOff)
			h.advance(time.Second)
			h.wantState(fsm.Established)
		},
		wantSteps: []string{cFail, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection failed", "reconnecting", "recovered"},
	},
	{
		race: "R12", name: "stale generations and their notifications are inert",
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.advance(time.Second)
			h.wantState(fsm.Established)
			before, steps := h.sup.Stats().Dropped, len(h.steps())
			for _, k := range []msgKind{mToolsChanged, mSessionEnded, mConnectTimeout, mStable, mTermWindow, mAttempt} {
				h.sup.send(message{kind: k, gen: 1, err: errBoom})
			}
			h.sup.send(message{kind: mRetryDue, seq: 1})
			h.settle()
			h.wantState(fsm.Established)
			if got := h.sup.Stats().Dropped - before; got < 6 {
				t.Fatalf("dropped %d stale signals, want >= 6", got)
			}
			if len(h.steps()) != steps {
				t.Fatalf("stale signals caused transitions: %v", h.steps()[steps:])
			}
			if gen, _, _ := h.set.Server("srv"); gen != 2 {
				t.Fatalf("registration gen %d, want 2", gen)
			}
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R14", name: "two rapid list_changed never sync concurrently; a storm coalesces",
		run: func(t *testing.T, h *harness, _ error) {
			g := h.mem.Gen(1)
			g.HoldLists()
			g.NotifyToolsChanged()
			h.settle()
			for range 50 {
				h.sup.send(message{kind: mToolsChanged, gen: 1})
			}
			h.settle()
			g.AddTool("added")
			g.ReleaseLists()
			h.settle()
			total, most := g.Lists()
			if most != 1 {
				t.Fatalf("%d tools/list ran concurrently", most)
			}
			// activation + the running sync + exactly one coalesced follow-up
			// (the SDK's own list_changed for "added" may add one more).
			if total < 3 || total > 4 {
				t.Fatalf("tools/list calls = %d, want 3 (or 4)", total)
			}
		},
		wantSteps: []string{cEst, eTC, eDisp, dDone},
		collapse:  true,
		wantTools: []string{"srv__added", "srv__echo", "srv__hang"},
	},
	{
		race: "R15", name: "a hung handshake hits the connect timeout and is killed",
		fault:   onlyGen(1, transport.Fault{Hang: true}),
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			started := h.startAsync()
			h.wantState(fsm.Connecting)
			if h.mem.Live() != 1 {
				t.Fatal("the hung attempt is not live")
			}
			h.advance(5 * time.Second)
			<-started
			h.wantState(fsm.BackingOff)
			if h.mem.Live() != 0 {
				t.Fatal("the hung attempt was not terminated before backing off")
			}
			if !errors.Is(h.sup.State().LastErr, ErrConnectTimeout) {
				t.Fatalf("LastErr = %v", h.sup.State().LastErr)
			}
		},
		wantSteps: []string{cFail, lBack, bDisp, dDone},
		wantLogs:  []string{"connection failed", "reconnecting"},
	},
	{
		race: "R16", name: "dispose during connecting awaits the attempt and reaps it",
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Fault = onlyGen(1, transport.Fault{Hang: true})
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Start(context.Background()) }()
			h.settle()
			h.wantState(fsm.Connecting)
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("Start = %v", err)
			}
			if h.mem.Live() != 0 {
				t.Fatal("the attempt's transport outlived dispose")
			}
		},
		wantSteps: []string{cDisp, dDone},
	},
	{
		race: "R17", name: "manual reconnect from exhausted resets the budget",
		fault: failFrom(2, transport.Fault{OpenErr: errBoom}),
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.advance(time.Hour) // every retry fails: exhausted
			h.wantState(fsm.Exhausted)
			h.mem.Fault = nil
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established)
			if a := h.sup.State().Attempt; a != 0 {
				t.Fatalf("attempt = %d after manual reconnect", a)
			}
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lExh,
			xRec, cEst, eDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R17", name: "manual reconnect from backing-off skips the wait; elsewhere it is refused",
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established) // no clock advance
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err) // from established: restart
			}
			h.settle()
			h.wantState(fsm.BackingOff)
			h.advance(time.Second)
			h.wantState(fsm.Established)
			if h.sup.State().Gen != 3 {
				t.Fatalf("gen = %d, want 3", h.sup.State().Gen)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRec, cEst, eRec, lBack, bRetry, cEst, eDisp, dDone},
	},
	{
		race: "R18", name: "WaitForReady blocks through an outage and succeeds after recovery",
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			type result struct {
				text string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				res, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "waited"}, &CallOptions{WaitForReady: true})
				if err != nil {
					done <- result{err: err}
					return
				}
				done <- result{text: res.Content[0].(*mcp.TextContent).Text}
			}()
			h.settle()
			select {
			case r := <-done:
				t.Fatalf("returned during the outage: %+v", r)
			default:
			}
			_, err := h.sup.Call(context.Background(), "echo", nil, nil)
			var nc *NotConnectedError
			if !errors.As(err, &nc) || nc.State != fsm.BackingOff || nc.NextRetry.IsZero() || nc.Server != "srv" {
				t.Fatalf("fail-fast call: %v", err)
			}
			h.advance(time.Second)
			if r := <-done; r.err != nil || r.text != "waited" {
				t.Fatalf("after recovery: %+v", r)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
	},
	{
		race: "R18", name: "WaitForReady fails on exhausted, disposed and context end",
		fault: failFrom(2, transport.Fault{OpenErr: errBoom}),
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			wait := &CallOptions{WaitForReady: true}
			ctx, cancel := context.WithCancel(context.Background())
			ctxErr := make(chan error, 1)
			go func() { _, err := h.sup.Call(ctx, "echo", nil, wait); ctxErr <- err }()
			exh := make(chan error, 1)
			go func() { _, err := h.sup.Call(context.Background(), "echo", nil, wait); exh <- err }()
			h.settle()
			cancel()
			if err := <-ctxErr; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotConnected) {
				t.Fatalf("context end: %v", err)
			}
			h.advance(time.Hour)
			h.wantState(fsm.Exhausted)
			if err := <-exh; !errors.Is(err, ErrExhausted) {
				t.Fatalf("exhausted: %v", err)
			}
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
			if _, err := h.sup.Call(context.Background(), "echo", nil, wait); !errors.Is(err, ErrDisposed) {
				t.Fatalf("disposed: %v", err)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lExh, xDisp, dDone},
	},
	{
		race: "R19", name: "an in-flight call fails promptly when its generation ends; Close stays bounded",
		run: func(t *testing.T, h *harness, _ error) {
			errc := make(chan error, 1)
			go func() { _, err := h.sup.Call(context.Background(), "hang", nil, nil); errc <- err }()
			h.settle()
			if err := h.sup.Reconnect(); err != nil { // we close the generation ourselves
				t.Fatal(err)
			}
			h.settle()
			if err := <-errc; !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("in-flight call: %v", err)
			}
			h.wantState(fsm.BackingOff) // Close returned: the barrier completed
			h.advance(time.Second)
			go func() { _, err := h.sup.Call(context.Background(), "hang", nil, nil); errc <- err }()
			h.settle()
			h.mem.Gen(2).Kill() // the server ends it
			h.settle()
			if err := <-errc; err == nil {
				t.Fatal("in-flight call survived the loss")
			}
			h.wantState(fsm.BackingOff)
		},
		wantSteps: []string{cEst, eRec, lBack, bRetry, cEst, eLost, lBack, bDisp, dDone},
	},
	{
		race: "R19", name: "a call refused by a closed connection before the loop noticed takes the outage path",
		run: func(t *testing.T, h *harness, _ error) {
			release := make(chan struct{})
			h.sup.send(message{kind: mInspect, probe: func() { <-release }}) // hold the loop
			h.mem.Gen(1).Kill()
			synctest.Wait() // the SDK has seen the end; the loop has not
			errc := make(chan error, 1)
			go func() { _, err := h.sup.Call(context.Background(), "echo", nil, nil); errc <- err }()
			synctest.Wait()
			select {
			case err := <-errc:
				t.Fatalf("returned before the loop noticed the loss: %v", err)
			default:
			}
			close(release)
			h.settle()
			err := <-errc
			var nc *NotConnectedError
			if !errors.As(err, &nc) || (nc.State != fsm.Lost && nc.State != fsm.BackingOff) || errors.Is(err, ErrConnectionLost) {
				t.Fatalf("call = %v, want a NotConnectedError of the outage (never sent, so not lost)", err)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bDisp, dDone},
	},
	{
		race: "R20", name: "a registry conflict at sync leaves the previous registrations intact",
		tools: []string{"echo"},
		run: func(t *testing.T, h *harness, _ error) {
			claimOtherServer(t, h)
			g := h.mem.Gen(1)
			g.AddTool("_x")
			g.NotifyToolsChanged()
			h.settle()
			h.wantState(fsm.Established)
			if diff := cmp.Diff([]string{"srv__echo"}, h.registered()); diff != "" {
				t.Fatalf("previous registrations changed (-want +got):\n%s", diff)
			}
			if server, _, ok := h.set.Lookup("srv___x"); !ok || server != "srv_" {
				t.Fatal("the other server lost its tool")
			}
			if l := h.logsNamed("tools sync failed"); len(l) == 0 || !strings.Contains(l[0].Attrs["err"], "srv___x") {
				t.Fatalf("sync failure log: %+v", l)
			}
		},
		wantSteps: []string{cEst, eTC, eDisp, dDone},
		wantTools: []string{"srv__echo"},
	},
	{
		race: "R20", name: "a registry conflict at startup fails a strict Start",
		tools:   []string{"_x"},
		opts:    func(o *Options) { o.FailOnStartupError = true },
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			claimOtherServer(t, h)
			err := h.sup.Start(context.Background())
			h.settle()
			if !errors.Is(err, tools.ErrConflict) {
				t.Fatalf("strict Start = %v, want ErrConflict", err)
			}
			h.wantState(fsm.Disposed)
			if server, _, ok := h.set.Lookup("srv___x"); !ok || server != "srv_" {
				t.Fatal("the other server lost its tool")
			}
			if h.mem.Live() != 0 {
				t.Fatal("the failed activation's transport is live")
			}
		},
		wantSteps: []string{cFail, lDisp, dDone},
	},
	{
		race: "R12", name: "a stale retry timer is inert",
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			snap, before := h.sup.State(), h.sup.Stats()
			// The timer of an earlier backoff (sequence 0: none was ever
			// armed under it) fires now.
			h.sup.send(message{kind: mRetryDue, seq: 0})
			h.settle()
			h.wantState(fsm.BackingOff)
			if h.mem.Gen(2) != nil {
				t.Fatal("a stale retry timer started a generation")
			}
			if got := h.sup.State(); got.Gen != snap.Gen || !got.NextRetry.Equal(snap.NextRetry) {
				t.Fatalf("a stale retry timer changed the snapshot: %+v, was %+v", got, snap)
			}
			key := fsm.TimerCurrent.Key
			if got := h.sup.Stats().Rejected[key] - before.Rejected[key]; got != 1 {
				t.Fatalf("Rejected[%s] grew by %d, want 1", key, got)
			}
			h.advance(time.Second) // the current timer still fires
			h.wantState(fsm.Established)
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R12", name: "a stale generation's failure and notification are inert while the next one connects",
		run: func(t *testing.T, h *harness, _ error) {
			gate := make(chan struct{})
			h.mem.Fault = onlyGen(2, transport.Fault{Gate: gate})
			h.mem.Gen(1).Kill()
			h.settle()
			h.advance(time.Second)
			h.wantState(fsm.Connecting)
			before := h.sup.Stats()
			for _, k := range []msgKind{mConnectTimeout, mDeferralTimeout, mToolsChanged, mAttempt} {
				h.sup.send(message{kind: k, gen: 1, err: errBoom})
			}
			h.settle()
			h.wantState(fsm.Connecting)
			after := h.sup.Stats()
			ff, gc := fsm.FirstFailure.Key, fsm.GenCurrent.Key
			if got := after.Rejected[ff] - before.Rejected[ff]; got != 2 {
				t.Fatalf("Rejected[%s] grew by %d, want 2 (connect timeout, deferral timeout)", ff, got)
			}
			if got := after.Rejected[gc] - before.Rejected[gc]; got != 1 {
				t.Fatalf("Rejected[%s] grew by %d, want 1 (tools_changed)", gc, got)
			}
			if got := after.Dropped - before.Dropped; got != 4 {
				t.Fatalf("dropped %d stale signals, want 4", got)
			}
			close(gate)
			h.settle()
			h.wantState(fsm.Established)
			if gen, _, _ := h.set.Server("srv"); gen != 2 {
				t.Fatalf("registration gen %d, want 2", gen)
			}
		},
		wantSteps: []string{cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R21", name: "an old generation's late sync does not swallow the new generation's pending list_changed",
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			// The first sync of gen 1 and of gen 2 each wait, after their
			// tools/list returned, until released.
			hold := newSyncHold(1, 2)
			h.sup.testHooks = &testHooks{syncDone: hold.wait}
			if err := h.start(); err != nil {
				t.Fatal(err)
			}
			g1 := h.mem.Gen(1)
			g1.NotifyToolsChanged()
			h.settle()
			if !hold.waiting(1) {
				t.Fatal("gen 1's sync did not start")
			}
			g1.Kill() // gen 1 ends with its sync still running
			h.settle()
			h.advance(time.Second)
			h.wantState(fsm.Established)
			g2 := h.mem.Gen(2)
			g2.NotifyToolsChanged() // gen 2's own sync: lists echo, hang, then waits
			h.settle()
			gen2Synced := hold.waiting(2)
			g2.AddTool("added")
			g2.NotifyToolsChanged() // during gen 2's running sync: one more must follow
			h.settle()
			hold.release(1) // gen 1's sync completes after gen 2 is established
			h.settle()
			hold.release(2)
			h.settle()
			h.wantState(fsm.Established)
			if diff := cmp.Diff([]string{"srv__added", "srv__echo", "srv__hang"}, h.registered()); diff != "" {
				t.Fatalf("gen 2's list_changed was swallowed: registered tools (-want +got):\n%s", diff)
			}
			if !gen2Synced {
				t.Fatal("gen 2's first list_changed did not start its own sync")
			}
			if total, most := g2.Lists(); total != 3 || most != 1 {
				t.Fatalf("gen 2 tools/list calls = %d (at most %d at once), want 3 (activation, sync, follow-up), one at a time", total, most)
			}
		},
		wantSteps: []string{cEst, eTC, eLost, lBack, bRetry, cEst, eTC, eTC, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__added", "srv__echo", "srv__hang"},
	},
	{
		race: "R23", name: "a strict Start whose first attempt fails at once returns that attempt's error and joins everything",
		opts:    func(o *Options) { o.FailOnStartupError = true },
		fault:   onlyGen(1, transport.Fault{ConnectErr: errBoom}),
		noStart: true,
		// Before the fix Start also selected on the loop's end, a coin
		// flip once both were ready: 30 fresh supervisors lose it for sure.
		repeat: 30,
		run: func(t *testing.T, h *harness, _ error) {
			// Start selects only once the loop has finished: the activation
			// outcome and the loop's end are then both ready.
			h.sup.testHooks = &testHooks{startWait: func() { <-h.sup.Done() }}
			err := h.sup.Start(context.Background())
			select {
			case <-h.sup.Done():
			default:
				t.Fatal("strict Start returned before the loop ended")
			}
			if n := h.mem.Live(); n != 0 {
				t.Fatalf("strict Start returned with %d live transports", n)
			}
			if !errors.Is(err, errBoom) || errors.Is(err, ErrDisposed) {
				t.Fatalf("strict Start = %v, want the attempt's error (%v), not ErrDisposed", err, errBoom)
			}
			h.settle()
			h.wantState(fsm.Disposed)
		},
		wantSteps: []string{cFail, lDisp, dDone},
		wantLogs:  []string{"connection failed"},
	},
	{
		race: "R25", name: "the connect timeout of an attempt deferred behind an old barrier starts when the attempt starts",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			gate := make(chan struct{}) // holds gen 2's handshake
			h.mem.Fault = func(gen uint64) transport.Fault {
				switch gen {
				case 1:
					return transport.Fault{HoldGone: true}
				case 2:
					return transport.Fault{Gate: gate}
				}
				return transport.Fault{}
			}
			stuckThenReconnect(t, h)
			h.advance(4 * time.Second) // 4 s of gen 2's 5 s spent waiting for gen 1
			h.wantState(fsm.Connecting)
			if h.mem.Gen(2) != nil {
				t.Fatal("gen 2 opened while gen 1 may live")
			}
			h.mem.Gen(1).ReleaseGone() // gen 1's barrier completes: gen 2 starts now
			h.settle()
			if h.mem.Gen(2) == nil {
				t.Fatal("gen 2 did not start at gen 1's barrier")
			}
			h.advance(4500 * time.Millisecond) // 4.5 s into gen 2's own connect timeout
			if s := h.sup.State(); s.State != fsm.Connecting || s.Gen != 2 {
				t.Fatalf("4.5 s after gen 2 started (8.5 s after the Reconnect): %s, gen %d, LastErr %v; "+
					"want gen 2 still connecting (its connect timeout starts when it does)", s.State, s.Gen, s.LastErr)
			}
			close(gate) // the handshake completes in time
			h.settle()
			h.wantState(fsm.Established)
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eLost, lStuck, xRec, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "gave up", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R25", name: "a deferred attempt whose old barrier never completes fails naming the barrier, and opens nothing",
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			stuckThenReconnect(t, h)
			h.advance(5 * time.Second) // the deferral's bound (the connect timeout)
			h.wantState(fsm.BackingOff)
			if err := h.sup.State().LastErr; !errors.Is(err, ErrStuck) || errors.Is(err, ErrConnectTimeout) {
				t.Fatalf("LastErr = %v, want ErrStuck naming the barrier, not ErrConnectTimeout", err)
			}
			h.advance(time.Hour) // every deferred retry fails the same way
			h.wantState(fsm.Exhausted)
			for _, l := range h.logsNamed("connection failed") {
				if e := l.Attrs["err"]; !strings.Contains(e, "generations [1] still closing") ||
					!strings.Contains(e, ErrStuck.Error()) || strings.Contains(e, ErrConnectTimeout.Error()) {
					t.Fatalf("connection failed (gen %s) err = %q, want the barrier of gen 1 named, no connect timeout", l.Attrs["gen"], e)
				}
			}
			for _, tr := range h.transitions() {
				if errors.Is(tr.Err, ErrConnectTimeout) {
					t.Fatalf("transition %s -%s-> %s of gen %d recorded %v", tr.From, tr.Event, tr.To, tr.Gen, tr.Err)
				}
			}
			for n := uint64(2); n <= h.sup.State().Gen; n++ {
				if h.mem.Gen(n) != nil {
					t.Fatalf("deferred gen %d opened a transport while gen 1 may live", n)
				}
			}
		},
		wantSteps: []string{cEst, eLost, lStuck, xRec,
			cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lBack, bRetry, cFail, lExh,
			xDisp, dTime},
		wantLogs: []string{"connection lost", "gave up",
			"connection failed", "reconnecting", "connection failed", "reconnecting", "connection failed", "reconnecting",
			"connection failed", "reconnecting", "connection failed", "gave up",
			"incomplete shutdown"},
		wantTools:  []string{},
		disposeErr: ErrIncompleteShutdown,
	},
	{
		race: "R26", name: "an Open that returns after drain_timeout terminates what it opened",
		opts: func(o *Options) {
			o.Opener = &lateOpener{mem: o.Opener.(*transport.Memory), release: make(chan struct{})}
		},
		noStart: true,
		// Before the handoff (an ack the loop closes when it takes the
		// message), whether the attempt saw that the loop ended was a coin
		// flip: 30 fresh supervisors make the row deterministic.
		repeat: 30,
		run: func(t *testing.T, h *harness, _ error) {
			late := h.sup.opts.Opener.(*lateOpener)
			disposedWhileLate(t, h)
			if h.mem.Live() != 1 {
				t.Fatal("the late Open has not started its generation")
			}
			close(late.release) // Open returns, long after the loop ended
			h.settle()
			if n := h.mem.Live(); n != 0 {
				t.Fatalf("after disposed, the late Open left %d live transports", n)
			}
			if !h.mem.Gen(1).Aborted() {
				t.Fatal("the attempt did not abort what it opened")
			}
		},
		wantSteps:  []string{cDisp, dTime},
		wantLogs:   []string{"incomplete shutdown"},
		disposeErr: ErrIncompleteShutdown,
	},
	{
		race: "R30", name: "a hung handshake is aborted (no stdin grace); an established generation that ends is terminated",
		fault:   onlyGen(1, transport.Fault{Hang: true}),
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			started := h.startAsync()
			h.advance(5 * time.Second) // the connect timeout
			if err := <-started; err != nil {
				t.Fatalf("non-strict Start = %v", err)
			}
			h.wantState(fsm.BackingOff)
			wantTeardown(t, h, 1, "hung at the handshake", true)
			h.advance(time.Second)
			h.wantState(fsm.Established)
			h.mem.Gen(2).Kill() // the server of an established generation dies
			h.settle()
			h.wantState(fsm.BackingOff)
			wantTeardown(t, h, 2, "lost after it served", false)
			h.advance(2 * time.Second)
			h.wantState(fsm.Established)
			if err := h.sup.Reconnect(); err != nil { // an operator's restart
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.BackingOff)
			wantTeardown(t, h, 3, "restarted by hand after it served", false)
		},
		wantSteps: []string{cFail, lBack, bRetry, cEst, eLost, lBack, bRetry, cEst, eRec, lBack, bDisp, dDone},
		wantLogs: []string{"connection failed", "reconnecting", "recovered", "connection lost", "reconnecting", "recovered",
			"reconnecting"},
	},
	{
		race: "R30", name: "a generation that failed its handshake or was disposed while connecting is aborted",
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			h.mem.Fault = func(gen uint64) transport.Fault {
				switch gen {
				case 1:
					return transport.Fault{ConnectErr: errBoom}
				case 2:
					return transport.Fault{Hang: true}
				}
				return transport.Fault{}
			}
			if err := h.start(); err != nil {
				t.Fatalf("non-strict Start = %v", err)
			}
			h.wantState(fsm.BackingOff)
			wantTeardown(t, h, 1, "failed its handshake", true)
			h.advance(time.Second)
			h.wantState(fsm.Connecting)
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
			wantTeardown(t, h, 2, "disposed while connecting", true)
		},
		wantSteps: []string{cFail, lBack, bRetry, cDisp, dDone},
		wantLogs:  []string{"connection failed", "reconnecting"},
	},
}

func TestRaceTable(t *testing.T) {
	for _, row := range raceTable {
		t.Run(row.race+"/"+row.name, func(t *testing.T) {
			for range max(1, row.repeat) {
				synctest.Test(t, func(t *testing.T) { runRow(t, row) })
				if t.Failed() {
					return
				}
			}
		})
	}
}

// rowResult is what a row left behind: its supervisor's counters and
// every transition the observer saw.
type rowResult struct {
	stats Stats
	trans []Transition
}

func runRow(t *testing.T, row raceRow) rowResult {
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
		if diff := cmp.Diff(row.wantTools, h.registered(), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("registered tools (-want +got):\n%s", diff)
		}
	}
	if err := h.dispose(); !errors.Is(err, row.disposeErr) && err != row.disposeErr {
		t.Fatalf("Dispose = %v, want %v", err, row.disposeErr)
	}
	h.wantState(fsm.Disposed)
	h.releaseQuarantine()
	steps := h.steps()
	if row.collapse {
		steps = collapseRuns(steps)
	}
	if diff := cmp.Diff(row.wantSteps, steps); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if row.wantLogs != nil {
		if diff := cmp.Diff(row.wantLogs, h.messages(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	}
	if got := h.registered(); len(got) != 0 {
		t.Errorf("disposed with tools %v", got)
	}
	_ = backoff.Default
	return rowResult{stats: h.sup.Stats(), trans: h.transitions()}
}

func collapseRuns(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// claimOtherServer registers server "srv_" owning "srv___x", the public
// name our server's tool "_x" would also map to (R20).
func claimOtherServer(t *testing.T, h *harness) {
	t.Helper()
	if err := h.set.Reserve("srv_"); err != nil {
		t.Fatal(err)
	}
	if err := h.set.Replace("srv_", 1, []tools.Tool{{PublicName: "srv___x", Name: "x", InputSchema: []byte(`{"type":"object"}`)}}); err != nil {
		t.Fatal(err)
	}
}

// transitions returns a copy of every transition the observer saw.
func (h *harness) transitions() []Transition {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return append([]Transition(nil), h.rec.trans...)
}

// syncHold is a testHooks.syncDone seam: the first tools sync of each
// named generation waits, after its tools/list returned and before it
// reports to the loop, until release (R21).
type syncHold struct {
	mu      sync.Mutex
	gates   map[uint64]chan struct{}
	reached map[uint64]bool
}

func newSyncHold(gens ...uint64) *syncHold {
	s := &syncHold{gates: map[uint64]chan struct{}{}, reached: map[uint64]bool{}}
	for _, n := range gens {
		s.gates[n] = make(chan struct{})
	}
	return s
}

func (s *syncHold) wait(gen uint64) {
	s.mu.Lock()
	c, ok := s.gates[gen]
	if !ok || s.reached[gen] {
		c = nil // only the first sync of gen waits
	}
	s.reached[gen] = true
	s.mu.Unlock()
	if c != nil {
		<-c
	}
}

// waiting reports whether a sync of gen reached the hook.
func (s *syncHold) waiting(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reached[gen]
}

func (s *syncHold) release(gen uint64) { close(s.gates[gen]) }

// stuckThenReconnect kills gen 1, whose close signal the row withholds, so
// it is stuck (exhausted) after the termination window, and then reconnects
// by hand: gen 2 is deferred behind gen 1's barrier (R25).
func stuckThenReconnect(t *testing.T, h *harness) {
	t.Helper()
	h.mem.Gen(1).Kill()
	h.settle()
	h.wantState(fsm.Lost)
	h.advance(3 * time.Second) // the termination window
	h.wantState(fsm.Exhausted)
	if err := h.sup.Reconnect(); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.wantState(fsm.Connecting)
	if h.mem.Gen(2) != nil {
		t.Fatal("gen 2 opened while gen 1 may live")
	}
}

// lateOpener wraps the in-memory Opener with an Open that ignores the
// attempt's context: it starts the generation at once (a child spawned)
// and returns it only when the test closes release, a spawn that outlives
// drain_timeout (R26).
type lateOpener struct {
	mem     *transport.Memory
	release chan struct{}
}

func (o *lateOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	tg, err := o.mem.Open(context.WithoutCancel(ctx), gen)
	<-o.release
	return tg, err
}

// disposedWhileLate starts the supervisor (its attempt is held by a
// lateOpener), disposes it during connecting and lets the drain time out:
// the attempt is still running when the loop ends (R26).
func disposedWhileLate(t *testing.T, h *harness) {
	t.Helper()
	started := h.startAsync()
	h.wantState(fsm.Connecting)
	errc := make(chan error, 1)
	go func() { errc <- h.sup.Dispose(context.Background()) }()
	h.settle()
	h.wantState(fsm.Draining)
	h.advance(3 * time.Second) // the termination window: drain_timeout
	if err := <-errc; !errors.Is(err, ErrIncompleteShutdown) {
		t.Fatalf("Dispose = %v, want ErrIncompleteShutdown (the attempt is still running)", err)
	}
	h.wantState(fsm.Disposed)
	if err := <-started; err != nil {
		t.Fatalf("Start = %v", err)
	}
}

// TestEveryGuardRejects runs the whole race table and asserts that every
// declared guard refused at least one event somewhere: the guards are the
// supervisor's only stale-event filter (docs/design.md §3), so each is a
// check the code really makes. A refusal is counted in Stats.Rejected; the
// guards of released, of which exactly one holds, refused whenever a
// sibling was the guard taken.
func TestEveryGuardRejects(t *testing.T) {
	refused := map[string]uint64{}
	taken := map[string]int{}
	byName := map[string]string{}
	for _, g := range fsm.Guards {
		byName[g.Name] = g.Key
	}
	for _, row := range raceTable {
		t.Run(row.race+"/"+row.name, func(t *testing.T) {
			var res rowResult
			synctest.Test(t, func(t *testing.T) { res = runRow(t, row) })
			for key, n := range res.stats.Rejected {
				refused[key] += n
			}
			for _, tr := range res.trans {
				if tr.Guard == "" {
					continue
				}
				taken[byName[tr.Guard]]++
				for _, sib := range fsm.Rows(tr.From, tr.Event) {
					if sib.Guard.Name != tr.Guard {
						refused[sib.Guard.Key]++
					}
				}
			}
		})
	}
	t.Logf("refused %v; taken %v", refused, taken)
	for _, g := range fsm.Guards {
		if refused[g.Key] == 0 {
			t.Errorf("guard %s (%q) never refused an event in the race table (refused %v, taken %v)", g.Key, g.Name, refused, taken)
		}
	}
	for _, g := range []fsm.Guard{fsm.BudgetLeft, fsm.BudgetSpent, fsm.ReconnectOff} {
		if taken[g.Key] == 0 {
			t.Errorf("released was never taken under %s", g.Key)
		}
	}
}

// wantTeardown asserts how the supervisor ended generation n: Abort only
// for one that never served (no stdin grace), Terminate only for one that
// did (R30).
func wantTeardown(t *testing.T, h *harness, n uint64, what string, abort bool) {
	t.Helper()
	g := h.mem.Gen(n)
	if g == nil {
		t.Fatalf("gen %d was never opened", n)
	}
	if g.Aborted() != abort || g.Terminated() == abort {
		want := "Terminate, not Abort"
		if abort {
			want = "Abort, not Terminate"
		}
		t.Fatalf("gen %d (%s): Aborted=%v Terminated=%v, want %s", n, what, g.Aborted(), g.Terminated(), want)
	}
}
