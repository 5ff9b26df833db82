package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio host's session is connected after the first apply registered
// the lists (docs/design.md §20): the SDK scheduled no list_changed for
// it, so its initialize (a 2026-07-28 host's server/discover) is
// answered without waiting for one, and it hears none of lists it then
// reads. Before, the front waited 15 ms after the last change, and a
// legacy host heard a list_changed for lists it had not read yet.
func TestInitializeAfterTheFirstApplyIsNotHeld(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Options{}, "a", "b")
				r.stdio = true
				var heard atomic.Int32
				start := time.Now()
				cs := r.host(era, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					heard.Add(1)
				}})
				if took := time.Since(start); took >= sdkNotificationDelay {
					t.Errorf("initialize answered after %v: the front waited for a list_changed no one scheduled", took)
				}
				if got := toolNames(t, cs); !slices.Contains(got, "a__echo") || !slices.Contains(got, "b__echo") {
					t.Errorf("tools %v lack a__echo or b__echo", got)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if n := heard.Load(); n != 0 {
					t.Errorf("the host heard %d tools/list_changed for the lists it read after initialize", n)
				}
			})
		})
	}
}

// A change of the lists after the session connected may have scheduled a
// list_changed for it: the initialize still waits for it to go out, and
// the lists read after hold the change. Start runs the servers before any
// host, and a server gated in its connect registers after the connect.
func TestInitializeWaitsForAChangeAfterTheConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{}, "a", "b")
		gate := make(chan struct{})
		r.mems["b"].Fault = func(uint64) transport.Fault { return transport.Fault{Gate: gate} }
		r.srv.Start()
		var released time.Time
		go func() {
			synctest.Wait() // the host's initialize waits for the first apply
			released = time.Now()
			close(gate)
		}()
		cs := r.host("2025-11-25", nil)
		if took := time.Since(released); took < sdkNotificationDelay {
			t.Errorf("initialize answered %v after b's tools were registered: before the SDK's list_changed went out", took)
		}
		if got := toolNames(t, cs); !slices.Contains(got, "b__echo") {
			t.Errorf("tools %v lack b__echo", got)
		}
	})
}

// The rule settle keeps, alone: a session marked at its connect is
// answered at once while the lists' change stamp is the one it was
// marked with; any change stamped after waits out the SDK's debounce, and
// so does a session without a mark (an HTTP host's).
func TestSettleWaitsOnlyForAChangeAfterTheConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(mustConfig(t, map[string]any{"mcpServers": map[string]any{}}), Options{})
		defer s.cancel()
		close(s.applied)
		s.up.changed.Store(time.Now().UnixNano())
		marked := s.markSession(context.Background(), time.Time{})
		took := func(ctx context.Context) time.Duration {
			start := time.Now()
			s.settle(ctx)
			return time.Since(start)
		}
		if d := took(marked); d != 0 {
			t.Errorf("no change since the connect: settle took %v", d)
		}
		s.up.changed.Store(time.Now().UnixNano())
		if d := took(context.Background()); d < sdkNotificationDelay {
			t.Errorf("an unmarked session: settle took %v, want the SDK's debounce", d)
		}
		s.up.changed.Store(time.Now().UnixNano() + 1) // changed right after the connect
		if d := took(marked); d < sdkNotificationDelay {
			t.Errorf("a change after the connect: settle took %v, want the SDK's debounce", d)
		}
	})
}

// A first request that declares no capabilities (a 2026-07-28 host that
// skips server/discover) starts the servers after the session connected,
// as before: the lists registered then are announced to it, and its
// answer does not wait for the first apply.
func TestFirstRequestWithoutCapabilitiesConnectsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{}, "a")
		gate := make(chan struct{})
		r.mems["a"].Fault = func(uint64) transport.Fault { return transport.Fault{Gate: gate} }
		hr, cw := io.Pipe()
		cr, hw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		served := make(chan error, 1)
		go func() { served <- r.srv.Serve(ctx, &transport.HostStdio{Reader: hr, Writer: hw}) }()
		defer func() { _ = cw.Close(); _ = cr.Close(); cancel(); <-served }()
		if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		line := make([]byte, 256)
		n, err := cr.Read(line)
		if err != nil || !strings.Contains(string(line[:n]), `"id":1`) {
			t.Fatalf("ping answered %q, %v", line[:n], err)
		}
		select {
		case <-r.srv.Applied():
			t.Error("the ping was answered after the first apply")
		default:
		}
		close(gate)
	})
}

// While Serve holds the host's initialize for the first apply, the end of
// its context ends it at once, and a host gone before its first message
// ends Serve as the session's Wait did (nil).
func TestServeEndsDuringTheEarlyWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{}, "a")
		r.mems["a"].Fault = func(uint64) transport.Fault { return transport.Fault{Hang: true} }
		hr, cw := io.Pipe()
		cr, hw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- r.srv.Serve(ctx, &transport.HostStdio{Reader: hr, Writer: hw}) }()
		go func() {
			_, _ = mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).
				Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
		}()
		synctest.Wait() // the initialize read, Serve waiting for the hung server
		start := time.Now()
		cancel()
		if err := <-served; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Serve returned %v after its context ended", d)
		}
		_ = cw.Close()
		_ = cr.Close()
		synctest.Wait()

		hr2, cw2 := io.Pipe()
		_, hw2 := io.Pipe()
		go func() { served <- r.srv.Serve(context.Background(), &transport.HostStdio{Reader: hr2, Writer: hw2}) }()
		_ = cw2.Close() // EOF before any message
		if err := <-served; err != nil {
			t.Errorf("Serve of a host gone at once returned %v, want nil", err)
		}
	})
}

// A server's tools change while the host connects and initializes, at
// every moment of it in turn: the host ends up with the new tool, from
// its first list or after a list_changed; none stays hidden. Both eras,
// over stdio and in memory; real clock, for -race.
func TestNoToolHiddenByAChangeDuringTheConnect(t *testing.T) {
	for i := range 12 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := newRig(t, Options{}, "a")
			r.stdio = i%2 == 0
			servers := make(chan *mcp.Server, 4)
			serve := r.mems["a"].Serve
			r.mems["a"].Serve = func(gen uint64, s *mcp.Server) {
				serve(gen, s)
				select {
				case servers <- s:
				default: // a later generation
				}
			}
			added := make(chan struct{})
			go func() {
				defer close(added)
				var s *mcp.Server
				select {
				case s = <-servers:
				case <-time.After(testDeadline):
					return
				}
				time.Sleep(time.Duration(i) * 500 * time.Microsecond) // a different moment each run
				s.AddTool(&mcp.Tool{Name: "late", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return textResult("late"), nil
				})
			}()
			changed := make(chan struct{}, 1)
			cs := r.host(eras[i/2%2], &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}})
			defer func() { <-added }()
			deadline := time.After(testDeadline)
			for !slices.Contains(toolNames(t, cs), "a__late") {
				select {
				case <-changed:
				case <-deadline:
					t.Fatalf("a__late hidden: not listed, and no list_changed for %v", testDeadline)
				}
			}
		})
	}
}

// Shutdown ends a Serve still waiting for its host's first message, as it
// ends a connected session.
func TestShutdownEndsServeBeforeTheFirstMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(mustConfig(t, map[string]any{"mcpServers": map[string]any{}}), Options{})
		hr, cw := io.Pipe()
		_, hw := io.Pipe()
		defer cw.Close()
		served := make(chan error, 1)
		go func() { served <- s.Serve(context.Background(), &transport.HostStdio{Reader: hr, Writer: hw}) }()
		synctest.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		select {
		case err := <-served:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Serve returned %v, want context.Canceled", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Serve still waits for the host's first message after Shutdown")
		}
	})
}
