package mcpkeep

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// R19 with callers whose contexts can be cancelled: the request then runs
// on a reused callCtx watching the caller's context (generation.begin).
var cancellableRows = []raceRow{
	{
		race: "R19", name: "cancellable caller: an in-flight call fails promptly when its generation ends; Close stays bounded",
		run: func(t *testing.T, h *harness, _ error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 2)
			go func() { _, err := h.sup.Call(ctx, "hang", nil, nil); errc <- err }()
			dctx, dcancel := context.WithTimeout(context.Background(), time.Hour)
			defer dcancel()
			go func() { _, err := h.sup.Call(dctx, "hang", nil, nil); errc <- err }()
			h.settle()
			if err := h.sup.Reconnect(); err != nil {
				t.Fatal(err)
			}
			h.settle()
			for range 2 {
				if err := <-errc; !errors.Is(err, ErrConnectionLost) {
					t.Fatalf("in-flight call: %v", err)
				}
			}
			h.wantState(fsm.BackingOff) // Close returned: the barrier completed
			h.advance(time.Second)
			go func() { _, err := h.sup.Call(ctx, "hang", nil, nil); errc <- err }()
			h.settle()
			h.mem.Gen(2).Kill()
			h.settle()
			if err := <-errc; err == nil {
				t.Fatal("in-flight call survived the loss")
			}
			h.wantState(fsm.BackingOff)
		},
		wantSteps: []string{cEst, eRec, lBack, bRetry, cEst, eLost, lBack, bDisp, dDone},
	},
	{
		race: "R19", name: "cancellable caller: cancelling the caller's context ends its call at once; the generation serves on",
		run: func(t *testing.T, h *harness, _ error) {
			for i := range 3 { // the second and third run on a reused callCtx
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { _, err := h.sup.Call(ctx, "hang", nil, nil); errc <- err }()
				h.settle()
				cancel()
				h.settle()
				if err := <-errc; !errors.Is(err, context.Canceled) || errors.Is(err, ErrConnectionLost) {
					t.Fatalf("cancelled call %d: %v", i, err)
				}
				if _, err := h.sup.Call(ctx, "echo", nil, nil); !errors.Is(err, context.Canceled) {
					t.Fatalf("call on a cancelled context: %v", err)
				}
				live, cancelLive := context.WithCancel(context.Background())
				if _, err := h.sup.Call(live, "echo", nil, nil); err != nil {
					t.Fatalf("next call: %v", err)
				}
				cancelLive()
			}
			h.wantState(fsm.Established)
		},
		wantSteps: []string{cEst, eDisp, dDone},
	},
}

func TestRaceTableCancellable(t *testing.T) {
	for _, row := range cancellableRows {
		t.Run(row.race+"/"+row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runRow(t, row) })
		})
	}
}

// memGeneration is a generation over an in-memory server, as the loop
// makes it, for the callCtx tests.
func memGeneration(t *testing.T) *generation {
	t.Helper()
	tg, err := transport.NewMemory("echo").Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Terminate(); <-tg.Gone() })
	g := newGeneration(1)
	g.tg = tg
	if !g.reuseContexts() {
		t.Fatal("an in-memory generation does not reuse contexts")
	}
	return g
}

type ctxKey struct{}

func TestCallCtxValuesAndDeadline(t *testing.T) {
	g := memGeneration(t)
	at := time.Now().Add(time.Hour)
	a, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "a"), at)
	defer cancel()
	sc, ok := g.begin(a)
	if !ok {
		t.Fatal("begin refused")
	}
	if v := sc.ctx.Value(ctxKey{}); v != "a" {
		t.Fatalf("Value = %v", v)
	}
	if d, ok := sc.ctx.Deadline(); !ok || !d.Equal(at) {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
	if sc.ctx.Err() != nil {
		t.Fatalf("Err = %v", sc.ctx.Err())
	}
	first := sc.c
	g.end(sc)
	// The next request, with other values, gets the same callCtx and none
	// of the first caller's values.
	b := context.WithValue(context.Background(), ctxKey{}, "b")
	sc, _ = g.begin(b)
	if sc.c != first {
		t.Fatal("the callCtx was not reused")
	}
	if v := sc.ctx.Value(ctxKey{}); v != "b" {
		t.Fatalf("Value = %v", v)
	}
	if _, ok := sc.ctx.Deadline(); ok {
		t.Fatal("the second request has the first one's deadline")
	}
	if sc.ctx.Done() == nil {
		t.Fatal("a request of a caller that cannot cancel has no Done channel: the generation's end could not cut it")
	}
	g.end(sc)
}

// A context derived from a callCtx may outlive the request: the callCtx
// is then not reused. This also checks the context package still looks
// for its parent's cancelCtx under a *int key, which callCtx.Value relies
// on to notice.
func TestCallCtxDerived(t *testing.T) {
	g := memGeneration(t)
	for _, derive := range []func(context.Context){
		func(ctx context.Context) { _, cancel := context.WithCancel(ctx); cancel() },
		func(ctx context.Context) { _, cancel := context.WithTimeout(ctx, time.Hour); cancel() },
		func(ctx context.Context) { context.AfterFunc(ctx, func() {})() },
		func(ctx context.Context) {
			_, cancel := context.WithCancel(context.WithValue(ctx, ctxKey{}, 1)) // through a value context
			cancel()
		},
	} {
		sc, _ := g.begin(context.Background())
		derive(sc.ctx)
		if !sc.c.derived.Load() {
			t.Fatal("deriving a context went unnoticed")
		}
		g.end(sc)
		if len(g.free) != 0 {
			t.Fatal("a callCtx with a derived context was reused")
		}
	}
}

func TestCallCtxEndCalls(t *testing.T) {
	g := memGeneration(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idle, _ := g.begin(ctx)
	g.end(idle) // free, its hook kept
	bg, _ := g.begin(context.Background())
	sc, _ := g.begin(ctx)
	g.endCalls()
	for _, c := range []callScope{bg, sc} {
		select {
		case <-c.ctx.Done():
		default:
			t.Fatal("an in-flight request survived the generation's end")
		}
		if !errors.Is(c.ctx.Err(), context.Canceled) {
			t.Fatalf("Err = %v", c.ctx.Err())
		}
		g.end(c)
	}
	if len(g.free) != 0 || idle.c.hookStop != nil {
		t.Fatal("the generation's end left free callCtx or hooks behind")
	}
	if _, ok := g.begin(ctx); ok {
		t.Fatal("begin after the generation's end")
	}
}

func TestCallCtxCallerEnds(t *testing.T) {
	g := memGeneration(t)
	a, cancelA := context.WithCancel(context.Background())
	sc, _ := g.begin(a)
	cancelA()
	select {
	case <-sc.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the caller's cancellation did not reach the request")
	}
	if !errors.Is(sc.ctx.Err(), context.Canceled) {
		t.Fatalf("Err = %v", sc.ctx.Err())
	}
	g.end(sc)
	if len(g.free) != 0 {
		t.Fatal("a closed callCtx was kept")
	}

	// A context seen once is not watched after its request.
	b, cancelB := context.WithCancel(context.Background())
	sc, _ = g.begin(b)
	g.end(sc)
	if sc.c.hookStop != nil {
		t.Fatal("the hook of a context seen once outlived its request")
	}
	// Seen twice, it is; a free callCtx whose hooked context ends is
	// retired.
	sc, _ = g.begin(b)
	c := sc.c
	g.end(sc)
	if c.hookStop == nil {
		t.Fatal("the hook of a kept context was stopped")
	}
	cancelB()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.callsMu.Lock()
		closed := c.closed
		g.callsMu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the free callCtx was not closed when its hooked context ended")
		}
		time.Sleep(time.Millisecond)
	}
	sc, _ = g.begin(context.Background())
	if sc.c == c {
		t.Fatal("a closed callCtx was handed out again")
	}
	g.end(sc)
	// A request on an already cancelled context is done at once.
	sc, _ = g.begin(b)
	if sc.ctx.Err() == nil {
		t.Fatal("a request on a cancelled context is not done")
	}
	g.end(sc)
}

// A caller that keeps its context pays nothing per request (past its
// second). One with a fresh context per request pays the
// context.AfterFunc (two allocations) and, the AfterFunc being that
// context's first child, the children map the context package makes for
// it (two more) and its Done channel (one, which the SDK's own wait would
// make anyway); a context.WithCancel there costs six.
func TestCallCtxAllocs(t *testing.T) {
	g := memGeneration(t)
	kept, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		max  float64
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }, 0},
		{"kept", func() (context.Context, context.CancelFunc) { return kept, func() {} }, 0},
	} {
		got := testing.AllocsPerRun(1000, func() {
			ctx, cancel := c.ctx()
			sc, _ := g.begin(ctx)
			g.end(sc)
			cancel()
		})
		if got > c.max {
			t.Errorf("%s: %.1f allocations per request, want ≤ %.0f", c.name, got, c.max)
		}
	}
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	fresh := make([]context.Context, 1000)
	cancels := make([]context.CancelFunc, len(fresh))
	for i := range fresh {
		fresh[i], cancels[i] = context.WithCancel(parent)
	}
	i := 0
	got := testing.AllocsPerRun(len(fresh)-1, func() {
		sc, _ := g.begin(fresh[i])
		g.end(sc)
		i++
	})
	for _, c := range cancels {
		c()
	}
	if got > 5 {
		t.Errorf("fresh context: %.1f allocations per request, want ≤ 5", got)
	}
}

// Requests, caller cancellations and the generation's end, all at once.
func TestCallCtxRace(t *testing.T) {
	for range 20 {
		g := memGeneration(t)
		shared, cancelShared := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for range 200 {
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					switch r.IntN(3) {
					case 1:
						ctx = shared
					case 2:
						ctx, cancel = context.WithCancel(shared)
					}
					sc, ok := g.begin(ctx)
					if !ok {
						cancel()
						return
					}
					if r.IntN(4) == 0 {
						cancel()
					}
					_ = sc.ctx.Value(ctxKey{})
					select {
					case <-sc.ctx.Done():
						if sc.ctx.Err() == nil {
							panic("done without an error")
						}
					default:
					}
					g.end(sc)
					cancel()
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		if rand.IntN(2) == 0 {
			cancelShared()
		}
		g.endCalls()
		wg.Wait()
		cancelShared()
	}
}
