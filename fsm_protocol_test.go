package mcpkeep

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
		for range 5 {
			if r.state() == fsm.Established {
				break
			}
			r.advance(time.Second)
		}
		r.wantState(fsm.Established)
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
		for range 5 {
			if r.state() == fsm.Established {
				break
			}
			r.advance(time.Second)
		}
		r.wantState(fsm.Established)
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
