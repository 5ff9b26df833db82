package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// raceRow is one row of the race table (docs/design.md §7). Each row runs inside
// a synctest bubble with a mock clock; the harness checks I1–I6 after
// every step, and each row asserts its transition sequence, its lifecycle
// logs and its registrations, then disposes to quiescence.
type raceRow struct {
	race  string
	name  string
	opts  func(*Options)
	tools []string
	fault func(gen uint64) transport.Fault
	// serve, when set, adds to each generation's server (transport.Memory.Serve).
	serve func(gen uint64, s *mcp.Server)
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
	cEst    = "connecting -connected-> established"
	cFail   = "connecting -failed-> lost"
	cDisp   = "connecting -dispose-> draining"
	cTC     = "connecting -tools_changed-> connecting"
	eLost   = "established -closed-> lost"
	eTC     = "established -tools_changed-> established"
	eStab   = "established -stable-> established"
	eRec    = "established -reconnect-> lost"
	eDisp   = "established -dispose-> draining"
	lBack   = "lost -released-> backing-off"
	lExh    = "lost -released-> exhausted"
	lSignIn = "lost -released-> exhausted"
	lStuck  = "lost -stuck-> exhausted"
	lDisp   = "lost -dispose-> draining"
	bRetry  = "backing-off -retry_due-> connecting"
	bRec    = "backing-off -reconnect-> connecting"
	bDisp   = "backing-off -dispose-> draining"
	xRec    = "exhausted -reconnect-> connecting"
	xDisp   = "exhausted -dispose-> draining"
	dDone   = "draining -drained-> disposed"
	dTime   = "draining -drain_timeout-> disposed"
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
		race: "R16", name: "Start whose context ends while connecting leaves a running supervisor the caller disposes",
		noStart: true,
		run: func(t *testing.T, h *harness, _ error) {
			gate := make(chan struct{})
			h.mem.Fault = onlyGen(1, transport.Fault{Gate: gate})
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- h.sup.Start(ctx) }()
			h.settle()
			cancel()
			h.settle()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Start = %v, want context.Canceled", err)
			}
			// Start's doc: the supervisor keeps running (its first attempt
			// may still succeed); the caller owns it and must Dispose it.
			h.wantState(fsm.Connecting)
			close(gate)
			h.settle()
			h.wantState(fsm.Established)
			callEcho(t, h)
		},
		wantSteps: []string{cEst, eDisp, dDone},
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
	{
		race: "R36", name: "a connect that needs a sign-in stops in exhausted at once, spending no retry; a Reconnect after sign-in recovers",
		fault: failFrom(1, transport.Fault{ConnectErr: errNeedsSignIn}),
		run: func(t *testing.T, h *harness, startErr error) {
			if startErr != nil {
				t.Fatalf("non-strict Start = %v", startErr)
			}
			h.wantState(fsm.Exhausted)
			wantSignIn(t, h)
			h.mem.Fault = nil // the person signed in
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established)
			callEcho(t, h)
		},
		wantSteps: []string{cFail, lSignIn, xRec, cEst, eDisp, dDone},
		wantLogs:  []string{"connection failed", "sign-in required", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R36", name: "an established generation that ends for a sign-in stops in exhausted, its tools kept and failing with the command to run",
		run: func(t *testing.T, h *harness, _ error) {
			callEcho(t, h)
			h.mem.Gen(1).KillWith(errNeedsSignIn)
			h.settle()
			h.wantState(fsm.Exhausted)
			wantSignIn(t, h)
		},
		wantSteps: []string{cEst, eLost, lSignIn, xDisp, dDone},
		wantLogs:  []string{"connection lost", "sign-in required"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
}

// errNeedsSignIn is what an OAuth handler reports when only a person can
// help (docs/design.md §22).
var errNeedsSignIn = &transport.SignInRequiredError{Server: "srv", Reason: "not signed in", Login: "mcpkeep auth login srv"}

// wantSignIn: the supervisor stopped for a sign-in without spending a
// retry, and says so in its snapshot and in the error of a call.
func wantSignIn(t *testing.T, h *harness) {
	t.Helper()
	snap := h.sup.State()
	if snap.Attempt != 0 || !errors.Is(snap.LastErr, ErrSignInRequired) {
		t.Fatalf("snapshot: attempt %d, last error %v; want 0 and sign-in required", snap.Attempt, snap.LastErr)
	}
	_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
	if !errors.Is(err, ErrSignInRequired) || !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "run: mcpkeep auth login srv") {
		t.Fatalf("call while signed out = %v; want exhausted, sign-in required, and the command to run", err)
	}
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
	if row.serve != nil {
		h.mem.Serve = row.serve
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
			t.Errorf("logs (-want +got):\n%s\n%+v", diff, h.rec.logs)
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
	for _, g := range []fsm.Guard{fsm.BudgetLeft, fsm.BudgetSpent, fsm.SignIn, fsm.ReconnectOff} {
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

// Rows of the race table that span supervisors (the Pool) or the name
// rule; their rig is in pool_race_test.go.

func TestR22ReplacementWaitsForPredecessorBarrier(t *testing.T) {
	t.Run("changed server waits, then starts by itself", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			old, errc := quarantineA(t, r, rigServer("a", 1))
			// The bounded wait: the replacement's connect timeout from the
			// moment the predecessor's dispose returned.
			r.advance(rigConnectTimeout - time.Millisecond)
			r.pending(errc, "Apply before its bounded wait ended")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.advance(time.Millisecond)
			err := r.returned(errc, "Apply after its bounded wait")
			if !errors.Is(err, ErrWaiting) || !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply = %v, want ErrWaiting and ErrIncompleteShutdown", err)
			}
			repl := r.sup("a")
			if repl == old || repl.State().Started {
				t.Fatalf("pool's a: same as old %v, started %v", repl == old, repl.State().Started)
			}
			if cfg, _ := r.p.Server("a"); !cfg.Equal(rigServer("a", 1)) {
				t.Fatalf("pool's a config %+v", cfg)
			}
			// Routable all along: an outage that says why, not an unknown tool.
			_, err = r.p.Call(context.Background(), "a__echo", nil, nil)
			var nc *NotConnectedError
			if !errors.As(err, &nc) || nc.Server != "a" || !errors.Is(nc.LastErr, ErrWaiting) || errors.Is(err, ErrUnknownTool) {
				t.Fatalf("Call while waiting: %v, want a NotConnectedError caused by ErrWaiting", err)
			}
			r.wantQuarantined("a")
			r.advance(time.Minute) // nothing but the close signal starts it
			if n := r.opens("a", 1); n != 0 || repl.State().Started {
				t.Fatalf("the replacement started (%d generations) before the release", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			select {
			case <-old.Released():
			default:
				t.Fatalf("old a: close signal delivered, name not released")
			}
			if got := r.wantEstablished("a"); got != repl {
				t.Fatalf("another supervisor took a")
			}
			if gen, _, _ := r.set.Server("a"); gen != 1 {
				t.Fatalf("a's tools registered by gen %d, want the replacement's gen 1", gen)
			}
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("removed and re-added while quarantined", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			old, errc := quarantineA(t, r) // Apply without a
			if err := r.returned(errc, "Apply removing a"); !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply removing a = %v, want ErrIncompleteShutdown", err)
			}
			if _, ok := r.p.Supervisor("a"); ok {
				t.Fatalf("removed a still in the pool")
			}
			errc = r.applyAsync(rigServer("a", 0))
			r.settle()
			r.pending(errc, "Apply re-adding a")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("re-added a opened %d generations while the old one is live", n)
			}
			r.advance(rigConnectTimeout)
			err := r.returned(errc, "Apply re-adding a, after its bounded wait")
			if !errors.Is(err, ErrWaiting) || errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply re-adding a = %v, want ErrWaiting only", err)
			}
			r.wantQuarantined("a")
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			<-old.Released()
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("a host's second supervisor of the name on the same Set", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			_, errc := quarantineA(t, r)
			if err := r.returned(errc, "Apply removing a"); !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply removing a = %v, want ErrIncompleteShutdown", err)
			}
			host, err := New(Options{Name: "a", Opener: r.opener("a"), Policy: rigPolicy,
				ConnectTimeout: rigConnectTimeout, Clock: r.clk, Sink: r.set})
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(context.Background()); !errors.Is(err, tools.ErrQuarantined) {
				t.Fatalf("host Start while a is quarantined = %v, want tools.ErrQuarantined", err)
			}
			r.settle()
			if n := r.opens("a", 1); n != 0 || host.State().Started {
				t.Fatalf("refused host supervisor opened %d generations, started %v", n, host.State().Started)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := host.Start(context.Background()); err != nil {
				t.Fatalf("host Start after the release = %v", err)
			}
			r.settle()
			if st := host.State().State; st != fsm.Established {
				t.Fatalf("host a: %s", st)
			}
			res, err := host.Call(context.Background(), "echo", map[string]any{"text": "host"}, nil)
			if err != nil || resultText(res) != "host" {
				t.Fatalf("host Call: %q %v", resultText(res), err)
			}
			if err := host.Dispose(context.Background()); err != nil {
				t.Fatalf("host Dispose: %v", err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("release within the bounded wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			_, errc := quarantineA(t, r, rigServer("a", 1))
			r.advance(rigConnectTimeout / 2)
			r.pending(errc, "Apply waiting for the predecessor")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			err := r.returned(errc, "Apply after the release")
			// The predecessor's dispose did not complete in its window,
			// which Apply reports (its doc: "every dispose that did not
			// complete"); the replacement is not reported as waiting.
			if errors.Is(err, ErrWaiting) || !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply = %v, want ErrIncompleteShutdown of the predecessor only", err)
			}
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("release within the drain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0)); err != nil {
				t.Fatal(err)
			}
			errc := r.applyAsync(rigServer("a", 1))
			r.settle()
			r.advance(rigTermWindow - time.Millisecond)
			r.pending(errc, "Apply while the old generation drains")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply = %v, want nil", err)
			}
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
}

func TestR24DisposeHonoursContextDuringApply(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(never <-chan struct{}) transport.Fault
		// stuck: the start cannot wind down without the test (its close
		// signal is withheld), so Dispose must return ctx's error.
		stuck bool
	}{
		{"connect held at a gate", func(never <-chan struct{}) transport.Fault { return transport.Fault{Gate: never} }, false},
		{"hung handshake", func(<-chan struct{}) transport.Fault { return transport.Fault{Hang: true} }, false},
		{"held connect whose close signal is withheld", func(never <-chan struct{}) transport.Fault {
			return transport.Fault{Gate: never, HoldGone: true}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newPoolRig(t, nil)
				never := r.newGate() // opened only by a failed row's cleanup
				r.setFault(func(name string, _ int, _ uint64) transport.Fault {
					if name == "a" {
						return c.fault(never.ch)
					}
					return transport.Fault{}
				})
				if err := r.apply(rigServer("b", 0)); err != nil {
					t.Fatal(err)
				}
				errc := r.applyAsync(rigServer("b", 0), rigServer("a", 0))
				r.settle()
				r.pending(errc, "Apply of a server that hangs in connecting")
				a := r.sup("a")
				if st := a.State().State; st != fsm.Connecting || r.live("a") != 1 {
					t.Fatalf("a: %s with %d live, want connecting with its generation live", st, r.live("a"))
				}

				const deadline = 2 * time.Second
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				dc := make(chan error, 1)
				go func() { dc <- r.p.Dispose(ctx) }()
				var err error
				select {
				case err = <-dc:
				case <-time.After(deadline + time.Second):
					t.Fatalf("Pool.Dispose did not return by its context's deadline")
				}
				if d := time.Since(start); d > deadline {
					t.Fatalf("Pool.Dispose returned after %v, its deadline was %v", d, deadline)
				}
				if c.stuck {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Pool.Dispose = %v, want the deadline", err)
					}
					r.releaseGone("a")
				} else if err != nil {
					t.Fatalf("Pool.Dispose = %v", err)
				}
				r.settle()
				// Apply has returned; what it says depends on which ended
				// the start first: the pool's cancel (ctx's error) or the
				// supervisor's dispose (a non-strict Start then returns nil).
				_ = r.returned(errc, "Apply after Dispose")
				if st := a.State().State; st != fsm.Disposed {
					t.Fatalf("a: %s after Dispose, want disposed", st)
				}
				if n := r.liveAll(); n != 0 || r.mem("a", 0).Live() != 0 {
					t.Fatalf("after Dispose: %d generations live", n)
				}
				r.wantReservable("a")
				r.wantReservable("b")
				if err := r.p.Apply(context.Background(), &config.Config{}); !errors.Is(err, ErrDisposed) {
					t.Fatalf("Apply after Dispose = %v, want ErrDisposed", err)
				}
			})
		})
	}
}

func TestR28EveryAnnouncedToolIsRoutable(t *testing.T) {
	t.Run("a subscriber calls what it is told about", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			type outcome struct {
				tool string
				text string
				err  error
			}
			var mu sync.Mutex
			var syncErrs []string
			told := 0
			waited := make(chan outcome, 64)
			r.set.Subscribe(func(ch tools.Change) {
				if ch.Kind != tools.Replaced {
					return
				}
				for _, tl := range ch.Tools {
					mu.Lock()
					told++
					mu.Unlock()
					// At once, on the goroutine that announced it.
					_, err := r.p.Call(context.Background(), tl.PublicName, map[string]any{"text": "now"}, nil)
					if errors.Is(err, ErrUnknownTool) || (err != nil && !errors.Is(err, ErrNotConnected)) {
						mu.Lock()
						syncErrs = append(syncErrs, fmt.Sprintf("%s (gen %d): %v", tl.PublicName, ch.Gen, err))
						mu.Unlock()
					}
					// And on a goroutine of its own, waiting for ready.
					go func() {
						res, err := r.p.Call(context.Background(), tl.PublicName, map[string]any{"text": "later"},
							&CallOptions{WaitForReady: true, ReadyTimeout: rigConnectTimeout})
						waited <- outcome{tl.PublicName, resultText(res), err}
					}()
				}
			})
			if err := r.apply(rigServer("a", 0), rigServer("b", 0)); err != nil {
				t.Fatal(err)
			}
			// a changed, b unchanged, c added.
			if err := r.apply(rigServer("a", 1), rigServer("b", 0), rigServer("c", 0)); err != nil {
				t.Fatal(err)
			}
			// b recovers with a longer list: a new swap.
			r.mem("b", 0).SetTools("echo", "more")
			r.gen("b", 0, 1).Kill()
			r.settle()
			r.advance(rigPolicy.InitialDelay)
			if _, defs, _ := r.set.Server("b"); len(defs) != 2 {
				t.Fatalf("b after recovery: %v", defs)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(syncErrs) > 0 {
				t.Fatalf("calls made as the tools were announced:\n%s", strings.Join(syncErrs, "\n"))
			}
			if told != 6 { // a, b, a again, c, b's two
				t.Fatalf("told about %d tools, want 6", told)
			}
			for range told {
				select {
				case o := <-waited:
					if o.err != nil || o.text != "later" {
						t.Errorf("waiting call of %s: %q %v", o.tool, o.text, o.err)
					}
				default:
					t.Fatalf("a waiting call of an announced tool has not returned")
				}
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	// restart runs a, then applies changed (a's new configuration) with
	// the new supervisor's first connect held at a gate (gated); it
	// returns the Apply in flight.
	restart := func(t *testing.T, r *poolRig, changed config.Server) <-chan error {
		t.Helper()
		if err := r.apply(rigServer("a", 0)); err != nil {
			t.Fatal(err)
		}
		old := r.wantEstablished("a")
		errc := r.applyAsync(changed)
		r.settle()
		r.pending(errc, "Apply whose new server is held in connecting")
		if st := old.State().State; st != fsm.Disposed || r.mem("a", 0).Live() != 0 {
			t.Fatalf("old a: %s, %d live", st, r.mem("a", 0).Live())
		}
		if r.gen("a", 1, 1) == nil || r.sup("a").State().State != fsm.Connecting {
			t.Fatalf("new a is not connecting")
		}
		if _, defs, _ := r.set.Server("a"); len(defs) != 0 {
			t.Fatalf("tools registered while a restarts: %v", defs)
		}
		return errc
	}
	gated := func(gate <-chan struct{}) rigFault {
		return func(name string, inc int, gen uint64) transport.Fault {
			if name == "a" && inc == 1 && gen == 1 {
				return transport.Fault{Gate: gate}
			}
			return transport.Fault{}
		}
	}
	type result struct {
		text string
		err  error
	}
	callAsync := func(r *poolRig, opts *CallOptions) <-chan result {
		c := make(chan result, 1)
		go func() {
			res, err := r.p.Call(context.Background(), "a__echo", map[string]any{"text": "back"}, opts)
			c <- result{resultText(res), err}
		}()
		return c
	}
	wantOutage := func(t *testing.T, err error) {
		t.Helper()
		var nc *NotConnectedError
		if !errors.Is(err, ErrNotConnected) || errors.Is(err, ErrUnknownTool) || !errors.As(err, &nc) || nc.Server != "a" {
			t.Fatalf("Call during the restart: %v, want a NotConnectedError of a", err)
		}
	}

	t.Run("restart: fail fast, then CallOptions.WaitForReady", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			gate := r.newGate()
			r.setFault(gated(gate.ch))
			errc := restart(t, r, rigServer("a", 1))
			_, err := r.p.Call(context.Background(), "a__echo", nil, nil)
			wantOutage(t, err)
			wc := callAsync(r, &CallOptions{WaitForReady: true})
			r.settle()
			select {
			case res := <-wc:
				t.Fatalf("WaitForReady call returned during the restart: %q %v", res.text, res.err)
			default:
			}
			gate.open()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("WaitForReady call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("restart: waitForReadyMs of the new configuration", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			gate := r.newGate()
			r.setFault(gated(gate.ch))
			changed := rigServer("a", 1)
			changed.WaitForReady = 2 * time.Second
			errc := restart(t, r, changed)
			// Bounded: past waitForReadyMs the call is an outage.
			wc := callAsync(r, nil)
			r.settle() // its timer is armed
			r.advance(changed.WaitForReady - time.Millisecond)
			select {
			case res := <-wc:
				t.Fatalf("waitForReadyMs call returned early: %q %v", res.text, res.err)
			default:
			}
			r.advance(time.Millisecond)
			select {
			case res := <-wc:
				wantOutage(t, res.err)
			default:
				t.Fatalf("waitForReadyMs call still waiting past waitForReadyMs")
			}
			// Within it: the call is served once the new generation is up.
			wc = callAsync(r, nil)
			r.settle()
			r.advance(changed.WaitForReady / 2)
			gate.open()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("waitForReadyMs call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
	// The drain window: the old supervisor's tools stay registered until
	// its drain ends (here held open by a withheld close signal).
	t.Run("changed: calls while the old generation drains", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0)); err != nil {
				t.Fatal(err)
			}
			old := r.wantEstablished("a")
			errc := r.applyAsync(rigServer("a", 1))
			r.settle()
			if st := old.State().State; st != fsm.Draining || publicNames(r.set) != "a__echo" {
				t.Fatalf("old a: %s, listed %q; want draining with its tool listed", st, publicNames(r.set))
			}
			_, err := r.p.Call(context.Background(), "a__echo", nil, nil)
			wantOutage(t, err)
			wc := callAsync(r, &CallOptions{WaitForReady: true})
			r.settle()
			select {
			case res := <-wc:
				t.Fatalf("WaitForReady call returned while the old a drains: %q %v", res.text, res.err)
			default:
			}
			r.gen("a", 0, 1).ReleaseGone() // the drain completes
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("WaitForReady call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	// A removed server's tools stay listed while it drains; a call of
	// them is an outage of the draining server, not an unknown tool.
	t.Run("removed: calls while it drains", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0), rigServer("b", 0)); err != nil {
				t.Fatal(err)
			}
			old := r.wantEstablished("a")
			errc := r.applyAsync(rigServer("b", 0))
			r.settle()
			if st := old.State().State; st != fsm.Draining || publicNames(r.set) != "a__echo b__echo" {
				t.Fatalf("old a: %s, listed %q; want draining with its tool listed", st, publicNames(r.set))
			}
			if _, err := r.p.Call(context.Background(), "a__echo", nil, nil); !errors.Is(err, ErrNotConnected) {
				t.Fatalf("Call of the listed a__echo while the removed a drains: %v, want ErrNotConnected", err)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := publicNames(r.set); got != "b__echo" {
				t.Fatalf("listed after the drain: %q", got)
			}
			if _, err := r.p.Call(context.Background(), "a__echo", nil, nil); !errors.Is(err, ErrUnknownTool) {
				t.Fatalf("Call of the removed a__echo after its drain: %v, want ErrUnknownTool", err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
}

// R29 the owner of a public name is independent of start order.
//
// A public name is "<server>__<tool>", and tool names may hold "__" or
// start with "_". Server "a" with tool "b__c" and server "a__b" with tool
// "c" both want "a__b__c"; so do "a" with "_b__c" and "a_" with "b__c"
// ("a___b__c"). In one Sink the first to register owns the name and the
// other's sync fails, so the owner would depend on which server started
// first. tools.CheckServerName (no "__", no trailing "_") makes the first
// "__" of a public name end the server name: such pairs cannot be
// configured, and for the names that can, every start order yields the
// same owner for every public name.
func TestR29PublicNameOwnerIndependentOfStartOrder(t *testing.T) {
	// Candidate server names, each offering the same tools; the rule picks
	// which of them may be configured.
	candidates := []string{"a", "a__b", "a_", "a_b", "a-b", "_a", "b"}
	toolNames := []string{"b__c", "c", "_b__c", "_x", "b_c", "x.y", "__c"}

	t.Run("the race the rule rules out", func(t *testing.T) {
		// A Set takes any name, so the race shows there: who owns
		// a__b__c is whoever registers first.
		owners := map[string]bool{}
		for _, order := range [][]string{{"a", "a__b"}, {"a__b", "a"}} {
			set := tools.NewSet(tools.Limits{})
			for _, server := range order {
				defs := buildTools(t, server, map[string][]string{"a": {"b__c"}, "a__b": {"c"}}[server])
				if err := set.Reserve(server); err != nil {
					t.Fatal(err)
				}
				err := set.Replace(server, 1, defs)
				if server == order[1] && !errors.Is(err, tools.ErrConflict) {
					t.Fatalf("order %v: second Replace = %v, want ErrConflict", order, err)
				}
			}
			owner, _, ok := set.Lookup("a__b__c")
			if !ok || owner != order[0] {
				t.Fatalf("order %v: a__b__c owned by %q, want the first, %q", order, owner, order[0])
			}
			owners[owner] = true
		}
		if len(owners) != 2 {
			t.Fatalf("owners %v: the race did not show", owners)
		}
	})

	t.Run("such servers cannot be configured", func(t *testing.T) {
		for _, bad := range []string{"a__b", "a_"} {
			_, _, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"`+bad+`":{"command":"y"}}}`), nil)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Path != "mcpServers."+bad || !strings.Contains(err.Error(), tools.ServerNameRule) {
				t.Errorf("config with server %q: %v, want an error at mcpServers.%s stating the rule", bad, err, bad)
			}
			_, err = New(Options{Name: bad, Opener: transport.NewMemory()})
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != "name" || !strings.Contains(err.Error(), tools.ServerNameRule) {
				t.Errorf("New(%q) = %v, want an *OptionError for name stating the rule", bad, err)
			}
		}
	})

	t.Run("every start order, one owner per name", func(t *testing.T) {
		var servers []string
		for _, s := range candidates {
			if tools.ValidServerName(s) {
				servers = append(servers, s)
			}
		}
		defs := map[string][]tools.Tool{}
		for _, s := range servers {
			defs[s] = buildTools(t, s, toolNames)
		}
		// Every public name, and who built it.
		built := map[string]string{}
		for _, s := range servers {
			for _, d := range defs[s] {
				if prev, dup := built[d.PublicName]; dup {
					t.Errorf("%s and %s/%s both build %q", prev, s, d.Name, d.PublicName)
				}
				built[d.PublicName] = s + "/" + d.Name
			}
		}
		orders := 0
		for order := range permutations(servers) {
			orders++
			set := tools.NewSet(tools.Limits{})
			for _, s := range order {
				if err := set.Reserve(s); err != nil {
					t.Fatal(err)
				}
				if err := set.Replace(s, 1, defs[s]); err != nil {
					t.Fatalf("start order %v: %s: %v", order, s, err)
				}
			}
			for public, want := range built {
				server, tool, ok := set.Lookup(public)
				if got := server + "/" + tool.Name; !ok || got != want {
					t.Fatalf("start order %v: Lookup(%q) = %q, %v; want %q", order, public, got, ok, want)
				}
			}
		}
		if orders < 2 {
			t.Fatalf("%d start orders of %v", orders, servers)
		}
	})
}

// Rows of the whole protocol (R31–R35); their rig is protocol_test.go's.

// Race rows R31–R35 (docs/design.md §7, §13): the whole protocol through a
// Supervisor. Each runs in a synctest bubble with the mock clock over the
// fixture of protocol_test.go (protoRig), and fails when the protection it
// names is removed.

// R31: a prompts or resources list_changed during a running sync (of any
// kind) is synced once more afterwards, never concurrently: one sync
// queue per generation, at most one list request in flight, and a storm
// of N notifications gives O(1) lists per kind. Protections: requestSync
// starts a sync only when none runs (g.syncing); onSyncDone starts the
// next pending kind.
func TestR31CatalogListChangedDuringSyncIsSyncedOnceMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, "", nil, nil)
		r.mustStart(t)
		r.feed.take()
		counts := func() map[string]int {
			out := map[string]int{}
			for _, m := range listMethods {
				out[m] = r.f.listCount(1, m)
			}
			return out
		}
		wantCounts := func(step string, tools, prompts, resources, templates int) {
			t.Helper()
			want := map[string]int{"tools/list": tools, "prompts/list": prompts, "resources/list": resources, "resources/templates/list": templates}
			if diff := cmp.Diff(want, counts()); diff != "" {
				t.Fatalf("%s: list requests (-want +got):\n%s", step, diff)
			}
		}
		wantCounts("connect", 1, 1, 1, 1)
		r.f.resetMostListing(1) // the connect lists its kinds at once; the syncs below may not overlap

		// 1. A prompts sync runs: its prompts/list was served (without
		// "added") and its answer is held.
		release := r.f.hold(1, "after:prompts/list")
		r.sup.send(message{kind: mCatalogChanged, gen: 1, kinds: kindPrompts})
		r.settle()
		if r.f.reached(1, "prompts/list") != 1 {
			t.Fatal("the prompts sync did not start")
		}
		// During it: a real change on the server (its list_changed comes
		// after the SDK's debounce), and a storm of every kind.
		r.f.addPrompt(1, r.f.server(1), "added")
		time.Sleep(20 * time.Millisecond)
		for range 50 {
			r.sup.send(message{kind: mCatalogChanged, gen: 1, kinds: kindPrompts})
			r.sup.send(message{kind: mCatalogChanged, gen: 1, kinds: kindResources})
			r.sup.send(message{kind: mToolsChanged, gen: 1})
		}
		r.settle()
		wantCounts("while the prompts sync runs", 1, 2, 1, 1)
		release()
		r.settle()
		// One more sync of each kind, one after the other.
		wantCounts("after the storm", 2, 3, 2, 2)
		r.wantFeed(t, "prompts/replaced/1: srv__added,srv__greet,srv__summarize")

		// 2. A resources sync runs (answer held); prompts and resources
		// change on the server meanwhile.
		release = r.f.hold(1, "after:resources/list")
		r.sup.send(message{kind: mCatalogChanged, gen: 1, kinds: kindResources})
		r.settle()
		r.f.server(1).RemovePrompts("summarize")
		r.f.addResource(1, r.f.server(1), "docs://c")
		time.Sleep(20 * time.Millisecond)
		for range 20 {
			r.sup.send(message{kind: mCatalogChanged, gen: 1, kinds: kindPrompts})
		}
		r.settle()
		wantCounts("while the resources sync runs", 2, 3, 3, 2)
		release()
		r.settle()
		wantCounts("after the resources sync", 2, 4, 4, 4)
		r.wantFeed(t,
			"prompts/replaced/1: srv__added,srv__greet",
			"resources/replaced/1: docs://a,docs://b,docs://c")

		if most := r.f.mostListing(1); most != 1 {
			t.Fatalf("%d list requests were in flight at once, want 1", most)
		}
		r.wantState(fsm.Established)
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// R32: SubscribeResource racing a reconnect. Called while gen 2 connects,
// after gen 2's attempt applied the sticky state (and before the loop took
// its outcome), it is recorded only; the subscription still reaches gen 2
// once established. Protection: onConnected's reconcileLater when the
// sticky state moved after the attempt applied it.
func TestR32SubscribeRacingReconnectReachesNewGeneration(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				r.mustStart(t)
				ctx := context.Background()
				must(t, r.sup.SubscribeResource(ctx, "docs://a"))
				gate := make(chan struct{})
				r.f.set(func(f *protoFixture) { f.gate[2] = gate })
				r.mem.Gen(1).Kill()
				r.settle()
				r.advance(time.Second)
				r.wantState(fsm.Connecting) // gen 2 waits in its transport's Connect

				// Hold the loop, then let gen 2's attempt run to its end:
				// it applies the sticky state and waits for the loop.
				entered, unblock := make(chan struct{}), make(chan struct{})
				go r.inspect(func() { close(entered); <-unblock })
				<-entered
				close(gate)
				synctest.Wait() // not settle: its invariant checks need the loop
				if got := r.f.seen(2, "subscribe"); !slices.Equal(got, []string{"docs://a"}) {
					t.Fatalf("gen 2's attempt subscribed %q, want [docs://a]", got)
				}
				if st := r.sup.State().State; st != fsm.Connecting {
					t.Fatalf("state %s, want connecting", st)
				}
				// The host subscribes now: nothing is established, so it is
				// only recorded.
				if err := r.sup.SubscribeResource(ctx, "docs://b"); err != nil {
					t.Fatalf("SubscribeResource while connecting = %v", err)
				}
				synctest.Wait()
				if got := r.f.seen(2, "subscribe"); len(got) != 1 {
					t.Fatalf("gen 2 got %q before it was established", got)
				}
				close(unblock)
				r.settle()
				r.wantState(fsm.Established)
				if got := r.f.seen(2, "subscribe"); !slices.Equal(got, []string{"docs://a", "docs://b"}) {
					t.Fatalf("gen 2's server subscribed %q, want [docs://a docs://b]: the subscription made while it connected was lost", got)
				}
				// And it is part of the sticky state from then on.
				r.crash(t, 2)
				if got := r.f.seen(3, "subscribe"); !slices.Equal(got, []string{"docs://a", "docs://b"}) {
					t.Fatalf("gen 3 subscribed %q", got)
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// R33: subscriptions, the logging level and the roots are restored after
// a crash before the host sees the new generation connected: the server
// of gen 2 has them all when the observer is told of connected, each seen
// while the supervisor was still connecting. Legacy protocol, where each
// of them is a request the server answers (or, for the roots, asks).
// Protections: the attempt's reconcile; the roots given to the new
// generation's client before its handshake.
func TestR33StickyStateRestoredBeforeConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, legacyProtocol, nil, func(o *Options) { o.Roots = []*mcp.Root{} })
		type seenAt struct{ subs, levels, roots []string }
		var mu sync.Mutex
		atConnected := map[uint64]seenAt{}
		r.sup.Subscribe(func(tr Transition) {
			if tr.Event == fsm.Connected {
				mu.Lock()
				atConnected[tr.Gen] = seenAt{r.f.seen(tr.Gen, "subscribe"), r.f.seen(tr.Gen, "logging/setLevel"), r.f.seen(tr.Gen, "roots")}
				mu.Unlock()
			}
		})
		r.mustStart(t)
		ctx := context.Background()
		must(t, r.sup.SubscribeResource(ctx, "docs://b"))
		must(t, r.sup.SubscribeResource(ctx, "docs://a"))
		must(t, r.sup.SetLoggingLevel(ctx, "error"))
		must(t, r.sup.SetRoots(ctx, []*mcp.Root{{URI: "file:///r2"}, {URI: "file:///r1"}}))
		r.settle()

		// gen 2 answers its roots/list (asked at initialized) before its
		// attempt may list: the host is not told of connected before.
		release := r.f.hold(2, "tools/list")
		r.mem.Gen(1).Kill()
		r.settle()
		r.advance(time.Second)
		r.wantState(fsm.Connecting)
		release()
		r.settle()
		r.wantState(fsm.Established)

		mu.Lock()
		got := atConnected[2]
		mu.Unlock()
		want := seenAt{subs: []string{"docs://a", "docs://b"}, levels: []string{"error"}, roots: []string{"file:///r1,file:///r2"}}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(seenAt{})); diff != "" {
			t.Fatalf("gen 2's server when the host was told it connected (-want +got):\n%s", diff)
		}
		for _, what := range []string{"subscribe", "logging/setLevel", "roots"} {
			for _, rec := range r.f.seenIn(2, what) {
				if rec.state != fsm.Connecting {
					t.Fatalf("gen 2's server saw %s %s in state %s, want connecting", what, rec.detail, rec.state)
				}
			}
		}
		if ip := r.f.session(2).InitializeParams(); ip == nil || ip.Capabilities.RootsV2 == nil {
			t.Fatal("gen 2 was not told of the roots capability at initialize")
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// R34: a sampling or elicitation request of a generation that has ended
// is refused with ErrStaleGeneration and never reaches the host's
// handler. The requests arrive at gen 1's client while it is current and
// are held (a receiving middleware on its mcp.Client) until the host
// restarted the server; the next generation's requests are answered.
// Legacy protocol: there the server sends these requests itself.
// Protection: hostRequest's check of the generation's context.
func TestR34StaleGenerationRequestIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, legacyProtocol, nil, nil)
		r.mustStart(t)
		ctx := context.Background()
		g1 := r.sup.live.Load()
		var mu sync.Mutex
		entered := 0
		results := map[string]error{}
		gate := make(chan struct{})
		g1.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "sampling/createMessage" && method != "elicitation/create" {
					return next(ctx, method, req)
				}
				mu.Lock()
				entered++
				mu.Unlock()
				<-gate
				res, err := next(ctx, method, req)
				mu.Lock()
				results[method] = err
				mu.Unlock()
				return res, err
			}
		})
		ss1 := r.f.session(1)
		serverGot := make(chan error, 2)
		go func() {
			_, err := ss1.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "stale"}}}})
			serverGot <- err
		}()
		go func() {
			_, err := ss1.Elicit(ctx, &mcp.ElicitParams{Message: "stale?", RequestedSchema: map[string]any{"type": "object"}})
			serverGot <- err
		}()
		synctest.Wait()
		mu.Lock()
		if entered != 2 {
			t.Fatalf("%d requests reached gen 1's client, want 2", entered)
		}
		mu.Unlock()

		dropped := r.sup.Stats().Dropped
		if err := r.sup.Reconnect(); err != nil { // gen 1 ends now
			t.Fatal(err)
		}
		r.settle()
		close(gate)
		r.settle()
		r.reestablish()
		for range 2 {
			if err := <-serverGot; err == nil {
				t.Fatal("gen 1's server got an answer from a generation that had ended")
			}
		}
		mu.Lock()
		for _, m := range []string{"sampling/createMessage", "elicitation/create"} {
			if err := results[m]; !errors.Is(err, ErrStaleGeneration) {
				t.Errorf("%s of the ended gen 1: handler returned %v, want ErrStaleGeneration", m, err)
			}
		}
		mu.Unlock()
		if got := append(r.host.named("sample"), r.host.named("elicit")...); len(got) != 0 {
			t.Fatalf("requests of an ended generation reached the host: %q", got)
		}
		if d := r.sup.Stats().Dropped - dropped; d < 2 {
			t.Fatalf("Dropped moved by %d, want >= 2", d)
		}
		// The current generation's requests are answered.
		res, err := r.f.session(2).CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "fresh"}}}})
		if err != nil || res.Content.(*mcp.TextContent).Text != "host answers fresh" {
			t.Fatalf("gen 2 CreateMessage = %+v, %v", res, err)
		}
		if got := r.host.named("sample"); !slices.Equal(got, []string{"sample srv: fresh"}) {
			t.Fatalf("host saw %q", got)
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// R35: a progress notification that arrives after its call ended never
// reaches the call's handler (CallOptions.Progress). Where it goes, as
// host.go's onProgress routes it:
//
//   - from the current generation, its token belongs to no live call, so
//     it goes to HostHandlers.Progress, the documented receiver of "tokens
//     that belong to no call". That is right: such a notification is not
//     a fault to hide (the SDK delivers responses on its read loop and
//     notifications on a separate queue, so progress the server sent just
//     before its result is routinely handled after the call returned); it
//     must not reach the call's handler, whose owner may have released
//     what it writes to (the proxy relays a call's progress to an
//     upstream request that has ended, against the rule that progress
//     names only active requests); and a host that does not want strays
//     sets no Progress. Remembering every ended token to drop them would
//     grow without bound.
//   - from a generation that has ended, it reaches neither: nothing of a
//     stale generation reaches the host (§13 "neither leaks across
//     generations").
//
// Protections: the call's token is removed when it returns
// (generation.removeProgress); hostNotify drops what an ended generation
// tells.
func TestR35ProgressAfterItsCallEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, "", nil, nil)
		ok := make(chan struct{})
		r.f.set(func(f *protoFixture) { f.progressOK = ok })
		r.mustStart(t)
		ctx := context.Background()
		var mu sync.Mutex
		var callGot []float64
		opts := &CallOptions{Progress: func(p *mcp.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			callGot = append(callGot, p.Progress)
			if len(callGot) == 2 {
				close(ok)
			}
		}}
		if got := txt(t).tool(r.sup.Call(ctx, "progress", nil, opts)); got != "done" {
			t.Fatalf("progress = %q", got)
		}
		tok, ss := r.f.token(1)
		must(t, ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 7}))
		r.settle()
		mu.Lock()
		if !slices.Equal(callGot, []float64{1, 2}) {
			t.Fatalf("the call's handler got %v, want [1 2]: a progress after the call returned reached it", callGot)
		}
		mu.Unlock()
		if got, want := r.host.named("progress"), []string{"progress srv " + tok.(string) + ": 7"}; !slices.Equal(got, want) {
			t.Fatalf("HostHandlers.Progress got %q, want %q", got, want)
		}

		// A call in flight on gen 1 whose progress is held in gen 1's
		// client until the host restarted the server.
		r.f.set(func(f *protoFixture) { f.progressOK = make(chan struct{}) }) // never: the call waits
		mu.Lock()
		callGot = nil
		mu.Unlock()
		g1 := r.sup.live.Load()
		gate := make(chan struct{})
		var once sync.Once
		g1.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "notifications/progress" {
					once.Do(func() { <-gate })
				}
				return next(ctx, method, req)
			}
		})
		callErr := make(chan error, 1)
		go func() {
			_, err := r.sup.Call(ctx, "progress", nil, &CallOptions{Progress: func(p *mcp.ProgressNotificationParams) {
				mu.Lock()
				callGot = append(callGot, p.Progress)
				mu.Unlock()
			}})
			callErr <- err
		}()
		synctest.Wait()
		if err := r.sup.Reconnect(); err != nil {
			t.Fatal(err)
		}
		r.settle()
		if err := <-callErr; !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("the call in flight on gen 1 = %v, want ErrConnectionLost", err)
		}
		close(gate)
		r.settle()
		mu.Lock()
		if len(callGot) != 0 {
			t.Fatalf("the ended generation's progress reached the call's handler: %v", callGot)
		}
		mu.Unlock()
		if got := r.host.named("progress"); len(got) != 1 {
			t.Fatalf("the ended generation's progress reached the host: %q", got)
		}
		r.reestablish()
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
