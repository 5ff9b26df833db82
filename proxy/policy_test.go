package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the host sees (docs/design.md §21), end to end through the proxy:
// filters, overrides, safe replay and heartbeats.

// safeTools are tools with and without replay hints, added to the rig's
// servers: look (readOnlyHint) and write (none). A call reports itself
// on arrived; the generations in hang block their calls until cancelled.
type safeTools struct {
	mu      sync.Mutex
	calls   map[string]int // "gen/tool"
	hang    map[uint64]bool
	arrived chan string
}

func newSafeTools(hang ...uint64) *safeTools {
	s := &safeTools{calls: map[string]int{}, hang: map[uint64]bool{}, arrived: make(chan string, 64)}
	for _, g := range hang {
		s.hang[g] = true
	}
	return s
}

func (s *safeTools) got(gen uint64, tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[fmt.Sprintf("%d/%s", gen, tool)]
}

func (s *safeTools) serve(gen uint64, srv *mcp.Server) {
	for name, ann := range map[string]*mcp.ToolAnnotations{"look": {ReadOnlyHint: true}, "write": nil} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema, Annotations: ann},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				s.mu.Lock()
				s.calls[fmt.Sprintf("%d/%s", gen, name)]++
				hang := s.hang[gen]
				s.mu.Unlock()
				s.arrived <- name
				if hang {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return textResult(fmt.Sprintf("%s on gen %d", name, gen)), nil
			})
	}
}

// newPolicyRig is newRig with each server's block extended by extra[name]
// and the top level by top; st, when set, adds its tools to every server.
func newPolicyRig(t *testing.T, opts Options, top map[string]any, extra map[string]map[string]any, st *safeTools, names ...string) *rig {
	t.Helper()
	r := &rig{t: t, mems: map[string]*transport.Memory{}}
	servers := map[string]any{}
	for _, name := range names {
		m := transport.NewMemory("echo", "hang")
		m.Serve = func(gen uint64, s *mcp.Server) {
			serveFeatures(name, gen, s)
			if st != nil {
				st.serve(gen, s)
			}
		}
		m.ServerOptions = func(gen uint64) *mcp.ServerOptions { return featureOptions(name) }
		r.mems[name] = m
		block := map[string]any{"command": "mem-" + name}
		maps.Copy(block, extra[name])
		servers[name] = block
	}
	cfg := map[string]any{"mcpServers": servers,
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 3}}
	maps.Copy(cfg, top)
	opts.Pool.Opener = func(sc config.Server) (transport.Opener, error) {
		return r.mems[sc.Name], nil
	}
	r.srv = New(mustConfig(t, cfg), opts)
	shutdownAtCleanup(t, r.srv, "Shutdown")
	return r
}

func rigPool(t *testing.T, r *rig) *mcpkeep.Pool {
	t.Helper()
	p, ok := r.srv.Pool()
	if !ok {
		t.Fatal("no pool")
	}
	return p
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// waitTools waits until the host lists want.
func waitTools(t *testing.T, cs *mcp.ClientSession, want []string) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !slices.Equal(toolNames(t, cs), want) {
		if time.Now().After(deadline) {
			t.Fatalf("tools %v, want %v", toolNames(t, cs), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A config that carries a host's disabledTools (and mcpkeep's filters and
// overrides) hides those tools from every front and every generation: not
// listed, and a call is the unknown-tool error.
func TestPolicyFiltersAndOverridesEndToEnd(t *testing.T) {
	r := newPolicyRig(t, Options{}, nil, map[string]map[string]any{"files": {
		"disabledTools": []string{"hang"},
		"tools":         map[string]any{"deny": []string{"fl*"}},
		"prompts":       map[string]any{"deny": []string{"greet"}},
		"toolOverrides": map[string]any{"echo": map[string]any{"name": "say", "title": "Say", "description": "Says it back."}},
	}}, nil, "files")
	want := []string{"files__rpcerr", "files__sample", "files__say", "files__sleep"}
	hs := r.serveHTTP()
	hosts := map[string]*mcp.ClientSession{}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		hosts["stdio/"+era], hosts["http/"+era] = r.host(era, nil), r.httpHost(hs.URL, era, nil)
	}
	r.waitApplied()
	for name, cs := range hosts {
		t.Run(name, func(t *testing.T) {

			waitTools(t, cs, want)
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			lt, _ := cs.ListTools(ctx, nil)
			for _, tl := range lt.Tools {
				if tl.Name == "files__say" && (tl.Title != "Say" || tl.Description != "Says it back.") {
					t.Errorf("override not shown: %+v", tl)
				}
			}
			if got, isErr := call(t, cs, "files__say", map[string]any{"text": "hi"}); got != "hi" || isErr {
				t.Errorf("files__say = %q (error %v): a renamed tool is routed to the server's echo", got, isErr)
			}
			for _, hidden := range []string{"files__hang", "files__flood", "files__echo"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: hidden, Arguments: map[string]any{}})
				if err == nil && !res.IsError {
					t.Errorf("%s callable: %q", hidden, text(res))
				}
				if err != nil && !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("%s: %v, want the unknown-tool error", hidden, err)
				}
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "files__greet"}); err == nil {
				t.Error("a filtered prompt is gettable")
			}
		})
	}
	// The library front: the pool refuses the name as unknown.
	if _, err := rigPool(t, r).Call(context.Background(), "files__hang", nil, nil); !errors.Is(err, mcpkeep.ErrUnknownTool) {
		t.Errorf("Pool.Call(files__hang) = %v, want ErrUnknownTool", err)
	}
	// Every generation: after a crash the new server's lists are filtered too.
	cs := r.host("2026-07-28", nil)
	r.mems["files"].Gen(1).Kill()
	deadline := time.Now().Add(testDeadline)
	for st := rigPool(t, r).States()[0]; st.Gen < 2 || st.State.String() != "established"; st = rigPool(t, r).States()[0] {
		if time.Now().After(deadline) {
			t.Fatal("no second generation")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitTools(t, cs, want)
}

// A call cut short by its server's crash: the readOnlyHint tool's call is
// sent once more on the next generation and the host gets its answer; the
// tool without hints fails as before.
func TestPolicySafeReplayEndToEnd(t *testing.T) {
	st := newSafeTools(1)
	r := newPolicyRig(t, Options{}, nil, nil, st, "files")
	cs := r.host("2026-07-28", nil)
	r.waitApplied()
	type out struct {
		text  string
		isErr bool
	}
	results := map[string]chan out{"look": make(chan out, 1), "write": make(chan out, 1)}
	for tool, c := range results {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__" + tool, Arguments: map[string]any{}})
			if err != nil {
				c <- out{err.Error(), true}
				return
			}
			c <- out{text(res), res.IsError}
		}()
	}
	for range 2 {
		select {
		case <-st.arrived:
		case <-time.After(testDeadline):
			t.Fatal("the calls never reached the server")
		}
	}
	r.mems["files"].Gen(1).Kill() // after the write: both calls were sent
	for tool, want := range map[string]func(out) bool{
		"look":  func(o out) bool { return !o.isErr && o.text == "look on gen 2" },
		"write": func(o out) bool { return o.isErr && strings.Contains(o.text, "connection to the server was lost") },
	} {
		select {
		case o := <-results[tool]:
			if !want(o) {
				t.Errorf("%s: %+v", tool, o)
			}
		case <-time.After(testDeadline):
			t.Fatalf("%s never returned", tool)
		}
	}
	if st.got(2, "look") != 1 || st.got(2, "write") != 0 {
		t.Errorf("gen 2 got look %d, write %d; want 1, 0", st.got(2, "look"), st.got(2, "write"))
	}
	sup, _ := rigPool(t, r).Supervisor("files")
	if n := sup.CallsReplayed(); n != 1 {
		t.Errorf("CallsReplayed = %d, want 1", n)
	}
}

// A host that sent a progress token hears every 5 s (the supervisor's
// clock) why its call is held while the server is down.
func TestPolicyHeartbeatReachesHost(t *testing.T) {
	clk := clock.NewMock()
	var mu sync.Mutex
	down := true
	r := newPolicyRig(t, Options{Pool: mcpkeep.PoolOptions{Clock: clk}},
		map[string]any{"waitForReadyMs": 600000,
			"reconnect": map[string]any{"initialDelayMs": 1000, "maxDelayMs": 1000, "maxAttempts": 100}}, nil, nil, "files")
	r.mems["files"].Fault = func(gen uint64) transport.Fault {
		mu.Lock()
		defer mu.Unlock()
		if gen >= 2 && down {
			return transport.Fault{OpenErr: errors.New("refused")}
		}
		return transport.Fault{}
	}
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	cs := r.host("2025-11-25", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params
	}})
	r.waitApplied()
	r.mems["files"].Gen(1).Kill()
	// The call is made once the loss is seen: made before, it could go
	// out on the dying connection and be lost with it, never held.
	sup, _ := rigPool(t, r).Supervisor("files")
	for deadline := time.Now().Add(testDeadline); sup.State().State == fsm.Established; {
		if time.Now().After(deadline) {
			t.Fatal("the loss of gen 1 was never seen")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		p := &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]any{"text": "back"}}
		p.SetProgressToken("host-token")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- text(res)
	}()
	// The mock clock moves 1 s at a time until the call, once held, beats.
	var beat *mcp.ProgressNotificationParams
	deadline := time.Now().Add(testDeadline)
	for beat == nil {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat")
		}
		clk.Add(time.Second)
		select {
		case beat = <-progress:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if beat.ProgressToken != "host-token" || !strings.HasPrefix(beat.Message, "waiting for files: ") {
		t.Errorf("heartbeat %+v", beat)
	}
	t.Logf("heartbeat: %q", beat.Message)
	mu.Lock()
	down = false
	mu.Unlock()
	for {
		clk.Add(time.Second)
		select {
		case got := <-done:
			if got != "back" {
				t.Fatalf("call = %q", got)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never returned")
		}
	}
}
