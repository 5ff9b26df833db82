package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relaying a server's own tasks (docs/design.md §25). The server with
// tasks of its own is mcpkeep itself: an inner proxy.Server (tasks
// "always") over in-memory servers, served to the outer proxy over an
// in-memory transport, one inner Server per generation of the outer's
// server "inner" (a restart of the server is a new inner Server, which
// never heard of the old one's tasks).

// innerOpener opens generation gen of "inner" on inners[gen-1].
type innerOpener struct {
	inners  []*rig
	version string

	mu   sync.Mutex
	gens map[uint64]*innerGen
}

func (o *innerOpener) SessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: o.version}
}

func (o *innerOpener) Open(_ context.Context, gen uint64) (transport.Generation, error) {
	if gen == 0 || int(gen) > len(o.inners) {
		return nil, fmt.Errorf("no inner server for generation %d", gen)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	g := &innerGen{ct: ct, cancel: cancel, gone: make(chan struct{})}
	srv := o.inners[gen-1].srv
	go func() {
		defer close(g.gone)
		_ = srv.Serve(ctx, st)
	}()
	o.mu.Lock()
	o.gens[gen] = g
	o.mu.Unlock()
	return g, nil
}

// kill ends generation gen as a crash would.
func (o *innerOpener) kill(gen uint64) {
	o.mu.Lock()
	g := o.gens[gen]
	o.mu.Unlock()
	g.cancel()
}

type innerGen struct {
	ct     mcp.Transport
	cancel context.CancelFunc
	gone   chan struct{}
}

func (g *innerGen) Transport() mcp.Transport       { return g.ct }
func (g *innerGen) Gone() <-chan struct{}          { return g.gone }
func (g *innerGen) Terminate()                     { g.cancel() }
func (g *innerGen) Exit() transport.ExitInfo       { return transport.ExitInfo{} }
func (g *innerGen) Established(*mcp.ClientSession) {}

// relayRig is an outer proxy over HTTP in front of "inner", whose
// generations are fresh inner proxies with tasks "always"; extra is more
// of the outer's configuration of it.
type relayRig struct {
	outer  *rig
	h      http.Handler
	inners []*rig
	open   *innerOpener
}

func newRelayRig(t *testing.T, version string, gens int, extra map[string]any, opts Options) *relayRig {
	t.Helper()
	rr := &relayRig{open: &innerOpener{version: version, gens: map[uint64]*innerGen{}}}
	for range gens {
		in := newRigWith(t, Options{}, map[string]map[string]any{
			"a": {"tasks": map[string]any{"mode": "always", "ttlMs": 60000}},
		}, "a")
		in.downstream = legacyVersion
		in.srv.Start()
		in.waitApplied()
		rr.inners = append(rr.inners, in)
	}
	rr.open.inners = rr.inners
	sc := map[string]any{"command": "mem-inner"}
	for k, v := range extra {
		sc[k] = v
	}
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{"inner": sc},
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 3}})
	opts.Pool.Opener = func(config.Server) (transport.Opener, error) { return rr.open, nil }
	out := &rig{t: t, srv: New(cfg, opts)}
	shutdownAtCleanup(t, out.srv, "outer Shutdown")
	h := out.handler()
	rr.outer, rr.h = out, h
	return rr
}

// counts are a Server's tasks by state name, without zeros.
func counts(s *Server) map[string]int {
	out := map[string]int{}
	for st, n := range s.Tasks() {
		if n > 0 {
			out[st.String()] += n
		}
	}
	return out
}

// engineCounts are the tasks a Server keeps itself (not the relayed), by
// state name, without zeros.
func engineCounts(s *Server) map[string]int {
	out := map[string]int{}
	for st, n := range s.tasks.e.Counts() {
		if n > 0 {
			out[st.String()] += n
		}
	}
	return out
}

// total is how many tasks a Server has, in any state.
func total(s *Server) int {
	n := 0
	for _, c := range s.Tasks() {
		n += c
	}
	return n
}

// relayedTask makes a task through the outer and checks it is the inner
// server's: the outer keeps none, inner (generation gen) has one, and the
// host's id is not the inner's.
func (rr *relayRig) relayedTask(t *testing.T, gen int, tool string, args map[string]any) string {
	t.Helper()
	jcode, res := callTool(t, rr.h, tool, args, true)
	id, _ := res["taskId"].(string)
	if jcode != 0 || res["resultType"] != "task" || id == "" {
		t.Fatalf("%s: %d %s", tool, jcode, resultText(res))
	}
	if c := engineCounts(rr.outer.srv); len(c) != 0 {
		t.Fatalf("the outer proxy keeps tasks %v: a server with tasks of its own must be relayed", c)
	}
	inner := rr.inners[gen-1].srv
	if n := len(inner.tasks.e.Counts()); n == 0 {
		t.Fatalf("the inner server has no task")
	}
	if _, err := inner.tasks.e.Get(context.Background(), "", id); err == nil {
		t.Fatalf("the host was given the server's own id %q", id)
	}
	if res["ttlMs"] != float64(60000) {
		t.Errorf("ttlMs %v, want the server's 60000", res["ttlMs"])
	}
	return id
}

// TestRelayTaskResult: a task of a server with tasks is the server's;
// tasks/get through mcpkeep reaches it and comes back under the host's id
// with the result inline; a forged id is -32602. Both eras of the
// outer's session with the server.
func TestRelayTaskResult(t *testing.T) {
	for _, era := range []string{legacyVersion, modernVersion} {
		t.Run(era, func(t *testing.T) {
			rr := newRelayRig(t, era, 1, nil, Options{})
			id := rr.relayedTask(t, 1, "inner__a__sleep", map[string]any{"ms": 100})
			done := pollTask(t, rr.h, id)
			if done["status"] != "completed" || done["taskId"] != id || !strings.Contains(resultText(done), "slept 100ms") {
				t.Fatalf("finished: %s", resultText(done))
			}
			if c := counts(rr.inners[0].srv); c["completed"] != 1 {
				t.Fatalf("inner tasks %v, want completed 1", c)
			}
			if jcode, _ := taskGet(t, rr.h, "r-FORGED"); jcode != -32602 {
				t.Fatalf("forged handle: error %d, want -32602", jcode)
			}
		})
	}
}

// TestRelayTaskCancel: tasks/cancel through mcpkeep cancels the server's
// task.
func TestRelayTaskCancel(t *testing.T) {
	rr := newRelayRig(t, modernVersion, 1, nil, Options{})
	id := rr.relayedTask(t, 1, "inner__a__hang", map[string]any{})
	jcode, ack := modern(t, rr.h, "tasks/cancel", id, map[string]any{"taskId": id}, true)
	if jcode != 0 || ack["resultType"] != "complete" {
		t.Fatalf("cancel: %d %s", jcode, resultText(ack))
	}
	if done := pollTask(t, rr.h, id); done["status"] != "cancelled" || done["taskId"] != id {
		t.Fatalf("after cancel: %s", resultText(done))
	}
	if c := counts(rr.inners[0].srv); c["cancelled"] != 1 {
		t.Fatalf("inner tasks %v, want cancelled 1", c)
	}
}

// TestRelayTaskInput: the server's task asks for input; tasks/get shows
// its input requests unchanged, and tasks/update answers them there.
func TestRelayTaskInput(t *testing.T) {
	rr := newRelayRig(t, modernVersion, 1, nil, Options{})
	id := rr.relayedTask(t, 1, "inner__a__sample", map[string]any{})
	var got map[string]any
	deadline := time.Now().Add(testDeadline)
	for {
		_, got = taskGet(t, rr.h, id)
		if got["status"] != "working" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // a host's poll interval
	}
	reqs, _ := got["inputRequests"].(map[string]any)
	if got["status"] != "input_required" || len(reqs) != 1 || got["taskId"] != id {
		t.Fatalf("task: %s", resultText(got))
	}
	var key string
	for k, v := range reqs {
		key = k
		if m, _ := v.(map[string]any); m["method"] != "sampling/createMessage" {
			t.Fatalf("input request %s: %v", k, v)
		}
	}
	answer := map[string]any{key: map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "yes"}}}
	jcode, ack := modern(t, rr.h, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": answer}, true)
	if jcode != 0 || ack["resultType"] != "complete" {
		t.Fatalf("update: %d %s", jcode, resultText(ack))
	}
	done := pollTask(t, rr.h, id)
	if done["status"] != "completed" || !strings.Contains(resultText(done), "sampled: yes") {
		t.Fatalf("after the answer: %s", resultText(done))
	}
	if c := counts(rr.inners[0].srv); c["completed"] != 1 {
		t.Fatalf("inner tasks %v, want completed 1", c)
	}
}

// TestRelayTaskServerRestarted: the server restarts while its task
// works; the next generation never heard of it, so tasks/get says failed
// with the outcome unknown (never "unknown id"), nothing runs again, and
// tasks/cancel acks. An id the live generation does not know is its own
// -32602, passed through.
func TestRelayTaskServerRestarted(t *testing.T) {
	rr := newRelayRig(t, modernVersion, 2, nil, Options{})
	id := rr.relayedTask(t, 1, "inner__a__hang", map[string]any{})
	sup, _ := rr.outer.srv.getPool().Supervisor("inner")
	rr.open.kill(1)
	waitFor(t, "generation 2", func() bool { s := sup.State(); return s.Gen == 2 && s.State == fsm.Established })
	jcode, got := taskGet(t, rr.h, id)
	er, _ := got["error"].(map[string]any)
	data, _ := er["data"].(map[string]any)
	if jcode != 0 || got["status"] != "failed" || got["taskId"] != id || data["reason"] != lostReasonKey ||
		!strings.Contains(fmt.Sprint(got["statusMessage"]), "outcome is unknown") {
		t.Fatalf("after the restart: %d %s", jcode, resultText(got))
	}
	if c := counts(rr.inners[1].srv); len(c) != 0 {
		t.Fatalf("the restarted server got tasks %v: the call ran again", c)
	}
	// The task held generation 1 from an idle stop; that ended with it.
	waitFor(t, "the lost task's hold released", func() bool { return sup.State().InFlight == 0 })
	if jcode, ack := modern(t, rr.h, "tasks/cancel", id, map[string]any{"taskId": id}, true); jcode != 0 || ack["resultType"] != "complete" {
		t.Fatalf("cancel: %d %s", jcode, resultText(ack))
	}
	// A handle of the live generation whose id the server does not know.
	if !rr.outer.srv.tasks.relay.reserve() {
		t.Fatal("no room")
	}
	stale, _ := rr.outer.srv.tasks.relay.add("inner", 2, "no-such-task", "working", 0, nil)
	if jcode, got := taskGet(t, rr.h, stale); jcode != -32602 {
		t.Fatalf("the server's unknown id: %d %s, want its -32602", jcode, resultText(got))
	}
}

// TestRelayTaskPolicy: a host without the extension gets a call, and
// the server is not told the extension; "never" neither keeps nor relays.
func TestRelayTaskPolicy(t *testing.T) {
	rr := newRelayRig(t, modernVersion, 1, nil, Options{})
	rr.relayedTask(t, 1, "inner__a__sleep", map[string]any{"ms": 1})
	before := total(rr.inners[0].srv)
	jcode, res := callTool(t, rr.h, "inner__a__sleep", map[string]any{"ms": 1}, false)
	if jcode != 0 || res["resultType"] == "task" || !strings.Contains(resultText(res), "slept 1ms") {
		t.Fatalf("without the extension: %d %s", jcode, resultText(res))
	}
	if after := total(rr.inners[0].srv); after != before {
		t.Fatalf("the server made a task for a host without the extension: %d tasks → %d", before, after)
	}

	never := newRelayRig(t, modernVersion, 1, map[string]any{"tasks": map[string]any{"mode": "never"}}, Options{})
	jcode, res = callTool(t, never.h, "inner__a__sleep", map[string]any{"ms": 1}, true)
	if jcode != 0 || res["resultType"] == "task" || !strings.Contains(resultText(res), "slept 1ms") {
		t.Fatalf("never: %d %s", jcode, resultText(res))
	}
	if c, o := counts(never.inners[0].srv), counts(never.outer.srv); len(c) != 0 || len(o) != 0 {
		t.Fatalf("never: inner tasks %v, outer tasks %v", c, o)
	}
}

// TestRelayTaskTTL: a handle is forgotten at the server's ttlMs (on the
// injected clock): then it is -32602 and the table is empty.
func TestRelayTaskTTL(t *testing.T) {
	mock := clock.NewMock()
	rr := newRelayRig(t, modernVersion, 1, nil, Options{Tasks: tasks.Options{Clock: mock}})
	id := rr.relayedTask(t, 1, "inner__a__hang", map[string]any{})
	mock.Add(59 * time.Second)
	if jcode, got := taskGet(t, rr.h, id); jcode != 0 || got["status"] != "working" {
		t.Fatalf("before the TTL: %d %s", jcode, resultText(got))
	}
	mock.Add(time.Second)
	if jcode, _ := taskGet(t, rr.h, id); jcode != -32602 {
		t.Fatalf("after the TTL: error %d, want -32602", jcode)
	}
	if held, reserved := rr.outer.srv.tasks.relay.size(); held != 0 || reserved != 0 {
		t.Fatalf("after the TTL the table holds %d (%d reserved)", held, reserved)
	}
}

// TestRelayTableBounds: the table is bounded before the server is asked,
// and a TTL is capped by MaxTTL.
func TestRelayTableBounds(t *testing.T) {
	mock := clock.NewMock()
	tb := newRelayTable(tasks.Options{Clock: mock, MaxTotal: 2, MaxTTL: time.Minute}, nil)
	for i, want := range []bool{true, true, false} {
		if got := tb.reserve(); got != want {
			t.Fatalf("MaxTotal 2: reserve %d = %v, want %v", i+1, got, want)
		}
	}
	a, _ := tb.add("s", 1, "x", "working", time.Hour, nil)
	tb.release()
	if !tb.reserve() {
		t.Fatal("a released place is free again")
	}
	b, _ := tb.add("s", 1, "y", "working", 0, nil) // the default TTL, capped at MaxTTL too
	if tb.reserve() {
		t.Fatal("two handles held: no place")
	}
	mock.Add(time.Minute)
	if _, ok := tb.lookup(a); ok {
		t.Fatal("a TTL of an hour is capped at MaxTTL (a minute)")
	}
	if _, ok := tb.lookup(b); ok {
		t.Fatal("the default TTL is capped at MaxTTL")
	}
	if held, reserved := tb.size(); held != 0 || reserved != 0 {
		t.Fatalf("held %d, reserved %d", held, reserved)
	}
}

// TestRelayTaskHoldsIdleStop: a relayed task is the server's work: an
// idle stop waits while it runs (docs/design.md §20), and may go once the
// host cancelled it.
func TestRelayTaskHoldsIdleStop(t *testing.T) {
	rr := newRelayRig(t, modernVersion, 1, map[string]any{"idleStopMs": 600000}, Options{})
	id := rr.relayedTask(t, 1, "inner__a__hang", map[string]any{})
	sup, _ := rr.outer.srv.getPool().Supervisor("inner")
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := sup.StopIdle(ctx); !errors.Is(err, mcpkeep.ErrBusy) {
		t.Fatalf("StopIdle with the server's task working: %v, want ErrBusy", err)
	}
	if n := sup.State().InFlight; n != 1 {
		t.Fatalf("InFlight %d, want the task's 1", n)
	}
	if jcode, ack := modern(t, rr.h, "tasks/cancel", id, map[string]any{"taskId": id}, true); jcode != 0 || ack["resultType"] != "complete" {
		t.Fatalf("cancel: %d %s", jcode, resultText(ack))
	}
	if err := sup.StopIdle(ctx); err != nil {
		t.Fatalf("StopIdle after the cancel: %v", err)
	}
}

// TestRelayHandleOwnerNamed: with replicas, a handle names its replica
// (docs/design.md §26), so another replica forwards its tasks/* here,
// where the server's connection is; a forged one does not parse.
func TestRelayHandleOwnerNamed(t *testing.T) {
	names, err := replica.NewNames("ra", &[32]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	tb := newRelayTable(tasks.Options{}, &Replicas{Names: names})
	if !tb.reserve() {
		t.Fatal("no room")
	}
	id, _ := tb.add("s", 1, "up", "working", time.Minute, nil)
	defer tb.close()
	if owner, _, err := names.Parse(replica.KindTask, id); err != nil || owner != "ra" {
		t.Fatalf("handle %q: owner %q, %v; want ra", id, owner, err)
	}
	forger, _ := replica.NewNames("ra", &[32]byte{9})
	if _, _, err := names.Parse(replica.KindTask, forger.Name(replica.KindTask, "r-x")); err == nil {
		t.Fatal("a handle minted under another key parses")
	}
}

// TestRelayedResultMeta: the front's _meta (serverInfo) is added where
// the server's answer has no key of that name; the server's own stays.
func TestRelayedResultMeta(t *testing.T) {
	r := &relayedResult{raw: json.RawMessage(`{"taskId":"h","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"inner"}}}`)}
	r.SetMeta(map[string]any{mcp.MetaKeyServerInfo: map[string]any{"name": "front"}, "k": 1})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, `"name":"inner"`) || strings.Contains(got, "front") || !strings.Contains(got, `"k":1`) || !strings.Contains(got, `"taskId":"h"`) {
		t.Fatalf("merged: %s", got)
	}
	plain := &relayedResult{raw: json.RawMessage(`{"taskId":"h"}`)}
	plain.SetMeta(map[string]any{mcp.MetaKeyServerInfo: map[string]any{"name": "front"}})
	if b, _ := json.Marshal(plain); !strings.Contains(string(b), `"name":"front"`) {
		t.Fatalf("without the server's: %s", b)
	}
}
