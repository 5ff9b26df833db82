package mcpkeep

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The race rows of lazy start and idle stop (docs/design.md §7, §20),
// run by TestRaceTable and counted by TestEveryGuardRejects.
func init() { raceTable = append(raceTable, idleRaceRows...) }

const (
	eIdle  = "established -idle_timeout-> lost"
	lIdle  = "lost -released-> idle"
	iDem   = "idle -demand-> connecting"
	iRec   = "idle -reconnect-> connecting"
	iDisp  = "idle -dispose-> draining"
	minute = time.Minute
)

// memEntry is the cache entry the in-memory server's catalog makes
// (transport.MemGen.AddTool's tools), so a hint equals the live list.
func memEntry(names ...string) *catalogcache.Entry {
	e := &catalogcache.Entry{Listed: true}
	for _, n := range names {
		if n == "hang" {
			e.Tools = append(e.Tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
			continue
		}
		e.Tools = append(e.Tools, &mcp.Tool{Name: n, Description: "echo " + n, InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}})
	}
	return e
}

func lazyCached(o *Options) {
	o.Lazy = true
	o.Cache = &memStore{e: memEntry("echo", "hang")}
}

func idleAfter(d time.Duration) func(*Options) { return func(o *Options) { o.IdleStop = d } }

// causes lists the start causes the observer saw, in order.
func causes(h *harness) []StartCause {
	var out []StartCause
	for _, tr := range h.transitions() {
		if tr.Cause != StartNone {
			out = append(out, tr.Cause)
		}
	}
	return out
}

func wantCauses(t *testing.T, h *harness, want ...StartCause) {
	t.Helper()
	// The observers run on the loop after the snapshot is published: a
	// request woken by it may be answered before they have heard.
	h.settle()
	got := causes(h)
	if len(got) != len(want) {
		t.Fatalf("start causes %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("start causes %v, want %v", got, want)
		}
	}
}

var idleRaceRows = []raceRow{
	{
		race: "R40", name: "a lazy server with a cached catalog starts idle; a call starts it and waits for it",
		opts: lazyCached,
		run: func(t *testing.T, h *harness, err error) {
			if err != nil {
				t.Fatal(err)
			}
			h.wantState(fsm.Idle)
			if h.mem.Gen(1) != nil {
				t.Fatal("a lazy cached server was spawned at start")
			}
			if got := h.registered(); len(got) != 2 {
				t.Fatalf("idle server not listed from its cache: %v", got)
			}
			callEcho(t, h) // waits through idle → connecting → established
			h.wantState(fsm.Established)
			wantCauses(t, h, StartDemand)
		},
		wantSteps: []string{iDem, cEst, eDisp, dDone},
		wantLogs:  []string{},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R41", name: "idle stop: a quiet server is stopped through its barrier, catalog kept, budget untouched, host told nothing",
		opts: idleAfter(minute),
		run: func(t *testing.T, h *harness, _ error) {
			callEcho(t, h)
			h.advance(minute - time.Second)
			h.wantState(fsm.Established)
			h.advance(time.Second)
			h.wantState(fsm.Idle)
			if !h.mem.Gen(1).Terminated() || h.mem.Gen(1).Aborted() {
				t.Fatal("an idle stop must end a serving server with its stdin grace (Terminate)")
			}
			snap := h.sup.State()
			if snap.Attempt != 0 || snap.LastErr != nil || snap.Tools != 2 {
				t.Fatalf("after an idle stop: %+v", snap)
			}
			callEcho(t, h)
			h.wantState(fsm.Established)
			wantCauses(t, h, StartStartup, StartDemand)
		},
		wantSteps: []string{cEst, eStab, eIdle, lIdle, iDem, cEst, eDisp, dDone},
		wantLogs:  []string{},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R42", name: "a demand racing the idle timer: a request in flight or just ended holds the server",
		opts: idleAfter(minute),
		run: func(t *testing.T, h *harness, _ error) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := h.sup.Call(ctx, "hang", map[string]any{}, nil)
				done <- err
			}()
			h.settle()
			h.advance(minute) // the timer fires with the call in flight
			h.wantState(fsm.Established)
			if n := h.sup.Stats().Rejected[fsm.Quiet.Key]; n != 1 {
				t.Fatalf("quiet refused %d times, want 1", n)
			}
			cancel()
			h.settle()
			<-done
			h.advance(30 * time.Second)
			callEcho(t, h) // 30 s before the re-armed timer
			h.advance(30 * time.Second)
			h.wantState(fsm.Established) // refused: a request 30 s ago
			h.advance(29 * time.Second)
			h.wantState(fsm.Established)
			h.advance(time.Second) // a full window after the last request
			h.wantState(fsm.Idle)
		},
		wantSteps: []string{cEst, eStab, eIdle, lIdle, iDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R43", name: "a demand during the idle stop's barrier waits, then starts the next generation: never two processes",
		opts:  idleAfter(minute),
		fault: onlyGen(1, transport.Fault{HoldGone: true}),
		run: func(t *testing.T, h *harness, _ error) {
			h.advance(minute)
			h.wantState(fsm.Lost)
			if !h.sup.State().IdleStopping {
				t.Fatal("not marked as stopping for idle")
			}
			done := make(chan error, 1)
			go func() {
				_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
				done <- err
			}()
			h.settle()
			select {
			case err := <-done:
				t.Fatalf("the call did not wait for the barrier: %v", err)
			default:
			}
			if h.mem.Gen(2) != nil {
				t.Fatal("gen 2 opened while gen 1's barrier is pending")
			}
			h.mem.Gen(1).ReleaseGone()
			h.settle()
			if err := <-done; err != nil {
				t.Fatalf("the call after the barrier: %v", err)
			}
			h.wantState(fsm.Established)
			if h.mem.MaxLive() != 1 {
				t.Fatalf("%d processes at once", h.mem.MaxLive())
			}
		},
		wantSteps: []string{cEst, eStab, eIdle, lIdle, iDem, cEst, eDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R44", name: "dispose while idle: nothing to wait for",
		opts: lazyCached,
		run: func(t *testing.T, h *harness, _ error) {
			h.wantState(fsm.Idle)
		},
		wantSteps: []string{iDisp, dDone},
		wantLogs:  []string{},
	},
	{
		race: "R45", name: "a resource subscription holds the server up",
		opts: idleAfter(minute),
		run: func(t *testing.T, h *harness, _ error) {
			// What SubscribeResource records (the in-memory server offers
			// no subscriptions to apply it to).
			h.sup.sticky.Lock()
			h.sup.sticky.subs = map[string]bool{"docs://a": true}
			h.sup.sticky.Unlock()
			h.advance(3 * minute)
			h.wantState(fsm.Established)
			h.sup.sticky.Lock()
			h.sup.sticky.subs = nil
			h.sup.sticky.Unlock()
			h.advance(minute)
			h.wantState(fsm.Idle)
		},
		wantSteps: []string{cEst, eStab, eIdle, lIdle, iDisp, dDone},
	},
	{
		race: "R46", name: "a crash of a server started on demand is an outage like any other",
		opts: lazyCached,
		run: func(t *testing.T, h *harness, _ error) {
			callEcho(t, h)
			h.settle() // the lists that follow the demand start's call
			h.mem.Gen(1).Kill()
			h.settle()
			h.wantState(fsm.BackingOff)
			h.advance(time.Second)
			h.wantState(fsm.Established)
			callEcho(t, h)
			wantCauses(t, h, StartDemand, StartRecovery)
		},
		wantSteps: []string{iDem, cEst, eLost, lBack, bRetry, cEst, eDisp, dDone},
		wantLogs:  []string{"connection lost", "reconnecting", "recovered"},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
	{
		race: "R47", name: "reconnect from idle starts a generation",
		opts: lazyCached,
		run: func(t *testing.T, h *harness, _ error) {
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			h.wantState(fsm.Established)
		},
		wantSteps: []string{iRec, cEst, eDisp, dDone},
		wantLogs:  []string{},
	},
	{
		race: "R48", name: "a lazy server without a cache starts once to learn its catalog, then stops when idle",
		opts: func(o *Options) { o.Lazy = true; o.Cache = &memStore{} },
		run: func(t *testing.T, h *harness, _ error) {
			h.wantState(fsm.Established)
			h.advance(DefaultIdleStop)
			h.wantState(fsm.Idle)
			e, _ := h.sup.opts.Cache.Load()
			if e == nil || !e.Listed || len(e.Tools) != 2 {
				t.Fatalf("the catalog was not cached: %+v", e)
			}
		},
		wantSteps: []string{cEst, eStab, eIdle, lIdle, iDisp, dDone},
		wantTools: []string{"srv__echo", "srv__hang"},
	},
}

// An idle server's call that cannot be served (the server does not come)
// fails as an outage once the connect timeout and the barrier bound pass.
func TestDemandBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, lazyCached)
		h.mem.Fault = func(uint64) transport.Fault { return transport.Fault{Hang: true} }
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
			done <- err
		}()
		h.settle()
		h.advance(5 * time.Second) // connect timeout: the attempt fails
		if err := <-done; !errors.Is(err, ErrNotConnected) {
			t.Fatalf("call to a server that did not come: %v", err)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A resource subscription made while idle starts the server: it is a
// request that needs it.
func TestSubscribeWhileIdleStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, lazyCached)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Idle)
		if err := h.sup.SubscribeResource(context.Background(), "docs://a"); err != nil {
			t.Fatal(err)
		}
		h.settle()
		h.wantState(fsm.Established)
		wantCauses(t, h, StartDemand)
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A demand start of a server whose catalog is registered sends the request
// that started it right after the handshake; its lists follow as a sync
// (docs/design.md §20). Before, the demand start listed every kind first,
// so a server slow to list held the request: here, lists that are never
// answered failed it after the connect timeout.
func TestDemandStartCallsBeforeListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, lazyCached)
		h.mem.Fault = func(uint64) transport.Fault { return transport.Fault{HoldLists: true} }
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Idle)
		done := make(chan error, 1)
		go func() {
			_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
			done <- err
		}()
		h.settle()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("call: %v", err)
			}
		default:
			t.Fatal("the call waits for the server's lists")
		}
		h.wantState(fsm.Established)
		if n, _ := h.mem.Gen(1).Lists(); n != 1 {
			t.Errorf("%d tools/list held, want the sync's one", n)
		}
		h.mem.Gen(1).ReleaseLists()
		h.settle()
		if snap := h.sup.State(); snap.Cached || snap.Tools != 2 {
			t.Errorf("after the sync: %+v; want the live lists registered", snap)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDemandStartListsAfterItsRequests (docs/design.md §20): the lists of
// a demand start wait until the requests that woke it ended, so they do
// not take the server's time from the first call; a request that runs on
// holds them at most syncHoldMax.
func TestDemandStartListsAfterItsRequests(t *testing.T) {
	t.Run("released when the call returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, lazyCached)
			if err := h.start(); err != nil {
				t.Fatal(err)
			}
			h.wantState(fsm.Idle)
			var lists []int
			h.mem.Serve = func(gen uint64, s *mcp.Server) {
				s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if method == "tools/call" {
							n, _ := h.mem.Gen(gen).Lists()
							lists = append(lists, n)
						}
						return next(ctx, method, req)
					}
				})
			}
			if _, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil); err != nil {
				t.Fatal(err)
			}
			h.settle()
			if len(lists) != 1 || lists[0] != 0 {
				t.Fatalf("tools/list before the call: %v, want none", lists)
			}
			if n, _ := h.mem.Gen(1).Lists(); n != 1 {
				t.Fatalf("%d tools/list after the call returned, want the held sync's one", n)
			}
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("bounded while the call runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, lazyCached)
			if err := h.start(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := h.sup.Call(ctx, "hang", nil, nil)
				done <- err
			}()
			h.settle()
			h.wantState(fsm.Established)
			if n, _ := h.mem.Gen(1).Lists(); n != 0 {
				t.Fatalf("%d tools/list while the demand's call runs, want none yet", n)
			}
			h.advance(syncHoldMax)
			if n, _ := h.mem.Gen(1).Lists(); n != 1 {
				t.Fatalf("%d tools/list after the hold's bound, want 1", n)
			}
			cancel()
			<-done
			h.settle()
			if n, _ := h.mem.Gen(1).Lists(); n != 1 {
				t.Fatalf("%d tools/list after the call ended, want still 1 (no second sync)", n)
			}
			if err := h.dispose(); err != nil {
				t.Fatal(err)
			}
		})
	})
}
