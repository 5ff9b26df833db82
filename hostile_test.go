package mcpkeep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile and broken peers (docs/design.md §19): each test scripts a
// server that misbehaves in one way over transport.Memory, inside a
// synctest bubble with the harness's mock clock.

// A server's JSON-RPC error -32003 or -32004 (the codes the SDK maps to its
// own mcp.ErrConnectionClosed) is the server's answer: the call returns it
// at once, as a *jsonrpc.Error, and it is not sent again, even with
// WaitForReady. Protection: peerConn (peerconn.go) and settle.
func TestHostileClosingCodesAreSentFailures(t *testing.T) {
	for _, era := range eras {
		for _, code := range []int64{codeClientClosing, codeServerClosing} {
			t.Run(fmt.Sprintf("%s/%d", eraName(era), code), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t, func(o *Options) {
						if era != "" {
							o.Opener = pinnedMemory{o.Opener.(*transport.Memory), era}
						}
					})
					var served atomic.Int32
					h.mem.Serve = func(_ uint64, s *mcp.Server) {
						s.AddTool(&mcp.Tool{Name: "closing", InputSchema: objectSchema},
							func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								served.Add(1)
								return nil, &jsonrpc.Error{Code: code, Message: "client is closing"}
							})
					}
					if err := h.start(); err != nil {
						t.Fatal(err)
					}
					errc := make(chan error, 1)
					go func() {
						_, err := h.sup.Call(context.Background(), "closing", nil, &CallOptions{WaitForReady: true})
						errc <- err
					}()
					h.settle()
					var err error
					select {
					case err = <-errc:
					default:
						t.Fatalf("the call still waits: the server's error %d was taken for a closed connection", code)
					}
					var je *jsonrpc.Error
					if !errors.As(err, &je) || je.Code != code {
						t.Fatalf("call = %v, want the server's *jsonrpc.Error with code %d", err, code)
					}
					if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, ErrConnectionLost) {
						t.Fatalf("call = %v: the server's answer reads as a transport failure", err)
					}
					if n := served.Load(); n != 1 {
						t.Fatalf("the tool ran %d times, want 1", n)
					}
					h.wantState(fsm.Established)
					if err := h.dispose(); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// A multi-round-trip call (2026-07-28) whose second round cannot be sent,
// because the connection ended while the host answered round 1, fails as
// a lost call: replaying it from round 1 on the next generation would ask
// the person again. Protection: multiRoundTrip marks a later round's
// ErrConnectionClosed as ErrConnectionLost, and settle keeps it sent.
func TestHostileMultiRoundTripNotReplayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proceed := make(chan struct{})
		var asked atomic.Int32
		r := newProtoRig(t, "", func(rec *hostRec) HostHandlers {
			hh := rec.handlers()
			hh.Elicit = func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked.Add(1)
				<-proceed
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			}
			return hh
		}, nil)
		r.mustStart(t)
		errc := make(chan error, 1)
		go func() {
			_, err := r.sup.Call(context.Background(), "elicit", nil, &CallOptions{WaitForReady: true})
			errc <- err
		}()
		synctest.Wait() // round 1 answered; the person is being asked
		release := make(chan struct{})
		r.sup.send(message{kind: mInspect, probe: func() { <-release }}) // the loop does not notice yet
		r.mem.Gen(1).Kill()
		synctest.Wait() // the SDK has seen the end
		close(proceed)  // round 2 is refused: the connection closed
		synctest.Wait()
		close(release)
		r.settle()
		r.reestablish()
		var err error
		select {
		case err = <-errc:
		default:
			t.Fatal("the call has not returned after the loss")
		}
		if n := asked.Load(); n != 1 {
			t.Fatalf("the person was asked %d times, want 1 (the call was replayed from round 1); call = %v", n, err)
		}
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("call = %v, want ErrConnectionLost", err)
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// listScript is a tools/list that misbehaves on demand: endless pages of
// 500 tools, one page whose cursor repeats, or endless empty pages. Each
// mode gives up after 50 pages, so the test ends even without the bound.
type listScript struct {
	mode  atomic.Int32 // 0 honest, else one of the list* modes
	pages atomic.Int32 // pages served in a misbehaving mode
}

const (
	listEndless = iota + 1
	listRepeat
	listEmpty
)

func (l *listScript) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		mode := l.mode.Load()
		if method != "tools/list" || mode == 0 {
			return next(ctx, method, req)
		}
		page := l.pages.Add(1)
		res := &mcp.ListToolsResult{NextCursor: fmt.Sprintf("c%d", page)}
		switch mode {
		case listEndless:
			for i := range 500 {
				res.Tools = append(res.Tools, &mcp.Tool{Name: fmt.Sprintf("p%d_%d", page, i), InputSchema: objectSchema})
			}
		case listRepeat:
			res.Tools = []*mcp.Tool{{Name: "again", InputSchema: objectSchema}}
			res.NextCursor = "same"
		}
		if page >= 50 {
			res.NextCursor = ""
		}
		return res, nil
	}
}

// A re-sync is bounded in items, pages and time (docs/design.md §19): a
// list stops at its limit plus one item, at a repeated cursor, after more
// pages than its limit allows items, and at the connect timeout. The sync
// fails, the previous tools stay, and later syncs run.
func TestHostileResyncIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      int32
		maxTools  int
		wantPages int32
		wantErr   string
	}{
		{"endless 500 per page", listEndless, 0, 3, "more than MaxTools (1000)"},
		{"repeated cursor", listRepeat, 0, 2, "repeats an earlier cursor"},
		{"endless empty pages", listEmpty, 5, 6, "still paginating after 6 pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(o *Options) { o.Limits.MaxTools = tc.maxTools })
				var l listScript
				h.mem.Serve = func(_ uint64, s *mcp.Server) { s.AddReceivingMiddleware(l.middleware) }
				if err := h.start(); err != nil {
					t.Fatal(err)
				}
				l.mode.Store(tc.mode)
				h.mem.Gen(1).NotifyToolsChanged()
				h.settle()
				if got := l.pages.Load(); got != tc.wantPages {
					t.Fatalf("the sync fetched %d pages, want %d", got, tc.wantPages)
				}
				failed := h.logsNamed("tools sync failed")
				if len(failed) != 1 || !strings.Contains(failed[0].Attrs["err"], tc.wantErr) {
					t.Fatalf("tools sync failed logs = %v, want one naming %q", failed, tc.wantErr)
				}
				h.wantState(fsm.Established)
				if got := h.registered(); !slices.Equal(got, []string{"srv__echo", "srv__hang"}) {
					t.Fatalf("registered = %v, want the previous tools", got)
				}
				if err := h.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A re-sync the server never answers ends at the connect timeout (on the
// supervisor's clock), and the next list_changed syncs again.
func TestHostileResyncNeverAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		g := h.mem.Gen(1)
		g.HoldLists()
		g.NotifyToolsChanged()
		h.settle()
		h.advance(h.sup.opts.ConnectTimeout)
		failed := h.logsNamed("tools sync failed")
		if len(failed) != 1 || !strings.Contains(failed[0].Attrs["err"], "connect timeout") {
			t.Fatalf("tools sync failed logs = %v, want one naming the connect timeout", failed)
		}
		h.wantState(fsm.Established)
		if got := h.registered(); !slices.Equal(got, []string{"srv__echo", "srv__hang"}) {
			t.Fatalf("registered = %v, want the previous tools", got)
		}
		g.ReleaseLists()
		before, _ := g.Lists()
		g.AddTool("late")
		g.NotifyToolsChanged()
		h.settle()
		if after, _ := g.Lists(); after <= before {
			t.Fatal("no sync after the one that timed out")
		}
		if got := h.registered(); !slices.Contains(got, "srv__late") {
			t.Fatalf("registered = %v, want srv__late after the next sync", got)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A storm of list_changed while a sync runs costs O(1) trace lines: one
// per sync, never one per notification (docs/design.md §19). The trace
// still passes trace.Check.
func TestHostileStormTraceStaysProportional(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const storm = 100
		h := newHarness(t, nil)
		var buf bytes.Buffer
		w := trace.NewWriter(&buf, TraceHeader(h.clk.Now(), h.sup))
		h.sup.Subscribe(TraceObserver(w))
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		g := h.mem.Gen(1)
		g.HoldLists()
		for range storm {
			g.NotifyToolsChanged()
			synctest.Wait() // the loop took it (the injection queue is short)
		}
		g.ReleaseLists()
		h.settle()
		if total, _ := g.Lists(); total != 3 { // the initial sync, the storm's first, one more
			t.Fatalf("%d tools/list, want 3", total)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(buf.String(), `"event":"tools_changed"`); n != 2 {
			t.Fatalf("%d tools_changed lines for a storm of %d notifications and 2 syncs, want 2:\n%s", n, storm, buf.String())
		}
		if seen := strings.Count(strings.Join(h.steps(), "\n"), eTC); seen != storm {
			t.Fatalf("observers saw %d tools_changed, want all %d", seen, storm)
		}
		if err := trace.Check(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("trace.Check: %v\n%s", err, buf.String())
		}
	})
}

// silentSetLevel is a Memory whose servers declare logging and record
// every logging/setLevel (with the bubble's time); the generations for
// which silent holds never answer it.
func silentSetLevel(name string, silent func(gen uint64) bool, got func(server string, at time.Time)) *transport.Memory {
	m := transport.NewMemory("echo")
	m.ServerOptions = func(uint64) *mcp.ServerOptions {
		return &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}}
	}
	m.Serve = func(gen uint64, s *mcp.Server) {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "logging/setLevel" {
					return next(ctx, method, req)
				}
				got(name, time.Now())
				if silent(gen) {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}
	return m
}

// Pool.SetLoggingLevel goes to the servers in parallel, and one that
// never answers costs the host's call stickyWait, not its context's whole
// deadline, nor the other server's setting (docs/design.md §19).
func TestHostileSetLevelNeverAnsweredPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		reached := map[string]time.Duration{}
		t0 := time.Now()
		p := NewPool(PoolOptions{Opener: func(sc config.Server) (transport.Opener, error) {
			return silentSetLevel(sc.Name, func(uint64) bool { return sc.Name == "bad" }, func(server string, at time.Time) {
				mu.Lock()
				reached[server] = at.Sub(t0)
				mu.Unlock()
			}), nil
		}})
		mustApply(t, p, memServer("bad"), memServer("good"))
		t0 = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := p.SetLoggingLevel(ctx, "debug")
		if took := time.Since(t0); took != stickyWait {
			t.Fatalf("SetLoggingLevel took %s, want the bound %s", took, stickyWait)
		}
		if !errors.Is(err, errNoAnswer) || !strings.Contains(err.Error(), `"bad"`) {
			t.Fatalf("SetLoggingLevel = %v, want bad's silence as a refusal", err)
		}
		mu.Lock()
		good, ok := reached["good"]
		mu.Unlock()
		if !ok || good != 0 {
			t.Fatalf("good got its setLevel at %s (reached %v), want at once", good, ok)
		}
		dctx, dcancel := context.WithTimeout(context.Background(), poolDeadline)
		defer dcancel()
		if err := p.Dispose(dctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A restarted server that never answers the setLevel that restores the
// host's level still connects: the silence is a refusal after stickyWait,
// not a connect timeout, so its reconnects do not fail until the budget
// is spent.
func TestHostileSetLevelNeverAnsweredReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.ConnectTimeout = time.Minute })
		h.mem = silentSetLevel("srv", func(gen uint64) bool { return gen > 1 }, func(string, time.Time) {})
		h.mem.Clock = h.clk
		h.sup.opts.Opener = h.mem
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		if err := h.sup.SetLoggingLevel(context.Background(), "debug"); err != nil {
			t.Fatal(err)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		h.advance(time.Second) // the retry: gen 2 connects and is asked for the level
		h.wantState(fsm.Connecting)
		time.Sleep(stickyWait) // the bubble's time: the mock clock stays
		h.settle()
		h.wantState(fsm.Established)
		if g := h.sup.State().Gen; g != 2 {
			t.Fatalf("established gen %d, want 2", g)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
