package proxy

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestForgetWhileSubscribePending (issue 33 item 2; docs/design.md §19,
// "Lock order"): a URI's subscription turn is held across the server's
// subscribe. forget took Server.mu and then each subscription's lock (the
// reverse of subscribe and leave, which take Server.mu under it), so a
// session ending while another's subscribe waited on its server held
// Server.mu for that whole network wait: every host request needing it
// (every tools/call, for the pool; a subscribe of any URI) hung with it, and
// with the two orders interleaved the hang was for good. Now forget waits
// for no turn under Server.mu.
func TestForgetWhileSubscribePending(t *testing.T) {
	gate := make(chan struct{})
	var n atomic.Int32
	hook := func(uri string) error {
		if uri == "mem://a/doc" {
			n.Add(1)
			<-gate
		}
		return nil
	}
	subscribeHook.Store(&hook)
	defer subscribeHook.Store(nil)
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	r := newRig(t, Options{}, "a")
	hs := r.serveHTTP()
	a := r.httpHost(hs.URL, legacyVersion, nil)
	b := r.httpHost(hs.URL, legacyVersion, nil)
	c := r.httpHost(hs.URL, legacyVersion, nil)
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	// b is watched (a session with a level) and subscribed elsewhere.
	if err := b.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://a/items/1"}); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://a/doc"}) }()
	waitFor(t, "a's subscribe at the server", func() bool { return n.Load() == 1 })
	nb := len(slicesOf(r.srv.srv.Sessions()))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's session closed", func() bool { return len(slicesOf(r.srv.srv.Sessions())) == nb-1 })
	waitFor(t, "b forgotten", func() bool {
		// Bounded: before the fix forget held Server.mu here.
		got := make(chan bool, 1)
		go func() {
			r.srv.mu.Lock()
			defer r.srv.mu.Unlock()
			got <- len(r.srv.mu.levels) == 0
		}()
		select {
		case ok := <-got:
			return ok
		case <-time.After(2 * time.Second):
			t.Fatal("Server.mu held while a's subscribe waits on its server (forget waits for the URI's lock under it)")
			return false
		}
	})
	// Another host's call (which takes Server.mu for the pool) answers at
	// once.
	for i := range 3 {
		if got, isErr := callWithin(t, c, "a__echo", map[string]any{"text": "x"}, 2*time.Second); isErr {
			t.Fatalf("call %d of another host while a subscribe is pending and a session was forgotten: %q", i, got)
		}
	}
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("a's subscribe: %v", err)
	}
}

func slicesOf[T any](seq func(func(T) bool)) []T {
	var out []T
	for v := range seq {
		out = append(out, v)
	}
	return out
}

// TestLockOrderPairsConcurrently (docs/design.md §19, "Lock order"): the
// public operations that take each nesting pair run at once from several
// goroutines, under -race: host sessions that set their level, subscribe
// and leave two URIs (a URI's turn, then Server.mu), call a tool that logs
// (outboxes.mu, then a session's outbox.mu; hostLink.mu, bridges.mu) and a
// tool that samples (the supervisor's callsMu for the calls in flight),
// and close (forget: Server.mu alone; the outbox dropped); beside them
// Reload (reloadMu, then Server.mu, Pool.mu, each Supervisor's mu) and the
// readiness report (Pool.mu, Supervisor.mu, Health.mu). Everything must
// end within the test's deadline: a cycle hangs it.
func TestLockOrderPairsConcurrently(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion
	hs := r.serveHTTP()
	r.waitApplied()
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": "mem-a"}},
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 3}})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	const hosts, rounds = 4, 6
	errs := make(chan error, hosts*rounds+2*rounds)
	var wg sync.WaitGroup
	for h := range hosts {
		wg.Go(func() {
			for i := range rounds {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, samplingHost("h")).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1},
						&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
				if err != nil {
					errs <- err
					return
				}
				uris := []string{"mem://a/doc", "mem://a/items/" + strconv.Itoa((h+i)%2)}
				steps := []func() error{
					func() error {
						return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: []mcp.LoggingLevel{"debug", "info"}[i%2]})
					},
					func() error { return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uris[0]}) },
					func() error { return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uris[1]}) },
					func() error {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__flood", Arguments: map[string]any{"n": 3}})
						return err
					},
					func() error {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sample"})
						return err
					},
					func() error { return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uris[i%2]}) },
				}
				for _, step := range steps {
					if err := step(); err != nil {
						errs <- err
						break
					}
				}
				_ = cs.Close() // forget, with one subscription or two left
			}
		})
	}
	wg.Go(func() {
		for range rounds {
			if err := r.srv.Reload(ctx, cfg); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range rounds * 4 {
			pool, _ := r.srv.Pool()
			_ = r.srv.Health().Readiness(pool)
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the concurrent operations did not end: a lock cycle?")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, "every session forgotten", func() bool {
		r.srv.mu.Lock()
		defer r.srv.mu.Unlock()
		return len(r.srv.mu.subscribed) == 0 && len(r.srv.mu.levels) == 0
	})
}
