package otelkeep

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// e2eDeadline bounds every wait of the end-to-end test.
const e2eDeadline = 60 * time.Second

const (
	hostTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	hostSpanID  = "00f067aa0ba902b7"
)

// TestTraceThroughCrashAndReplay (docs/design.md §27): a host's call whose
// server process is SIGKILLed mid-call, the readOnly call replayed on the
// next process, is one trace at a real OTLP/HTTP receiver: the host's span
// → mcpkeep's request span → attempt 1, the wait for recovery, attempt 2
// (linked to attempt 1); each process saw its attempt's span as its parent.
func TestTraceThroughCrashAndReplay(t *testing.T) {
	rcv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	tr, flush, err := FromEnv(ctx, "test")
	if err != nil || tr == nil {
		t.Fatalf("FromEnv: %v, %v", tr, err)
	}

	path, args, env := fixture.CommandEnv("normal")
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fx": map[string]any{"command": path, "args": args, "env": env}},
		"reconnect":  map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 5},
	})
	cfg, _, err := config.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The observers run on the loop after the snapshot is published, so
	// the replayed call, woken by it, may be answered before the tracer's
	// observer made the transition's span: an observer after it says when
	// it has.
	reestablished := make(chan struct{})
	var once sync.Once
	after := func(tr mcpkeep.Transition) {
		if tr.To == fsm.Established && tr.Gen == 2 {
			once.Do(func() { close(reestablished) })
		}
	}
	srv := proxy.New(cfg, proxy.Options{Tracer: tr, Pool: mcpkeep.PoolOptions{Observer: mcpkeep.Observers(tr.Observer(), after)}})
	hostCtx, stopHost := context.WithCancel(ctx)
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(hostCtx, st) }()
	defer func() {
		stopHost()
		<-served
		sctx, scancel := context.WithTimeout(context.Background(), e2eDeadline)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).Connect(hostCtx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	hold := filepath.Join(t.TempDir(), "held")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__meta", Arguments: map[string]any{"hold": hold},
			Meta: mcp.Meta{"traceparent": "00-" + hostTraceID + "-" + hostSpanID + "-01", "tracestate": "host=1"}})
		done <- answer{res, err}
	}()
	first := waitHeld(t, ctx, hold)
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", first.PID, err)
	}
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		t.Fatal("the call never answered")
	}
	if a.err != nil {
		t.Fatalf("call: %v", a.err)
	}
	if a.res.IsError || len(a.res.Content) != 1 {
		t.Fatalf("call answered %+v", a.res)
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(a.res.Content[0].(*mcp.TextContent).Text), &second); err != nil {
		t.Fatalf("the replay's _meta: %v", err)
	}
	select {
	case <-reestablished:
	case <-ctx.Done():
		t.Fatal("the observers never heard of generation 2's establishment")
	}
	if err := flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	all, bad := rcv.got()
	if len(bad) > 0 {
		t.Fatalf("the receiver refused exports: %q", bad)
	}
	// The lifecycle's transitions are short spans of their own.
	var spans []*tracepb.Span
	moves := map[string]bool{}
	for _, s := range all {
		if strings.HasPrefix(s.Name, SpanTransition+" ") {
			moves[attr(s, "mcpkeep.to")+"@"+attr(s, AttrGeneration)] = true
			if len(s.ParentSpanId) != 0 {
				t.Errorf("transition %q has a parent", s.Name)
			}
			continue
		}
		spans = append(spans, s)
	}
	for _, want := range []string{"established@1", "lost@1", "established@2"} {
		if !moves[want] {
			t.Errorf("no transition span to %s (have %v)", want, moves)
		}
	}
	var req, wait *tracepb.Span
	attempts := map[string]*tracepb.Span{}
	for _, s := range spans {
		if got := hex.EncodeToString(s.TraceId); got != hostTraceID {
			t.Errorf("span %q in trace %s, want the host's %s", s.Name, got, hostTraceID)
		}
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			req = s
		case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			attempts[attr(s, AttrAttempt)] = s
		case s.Name == SpanWait:
			wait = s
		}
	}
	if req == nil || wait == nil || attempts["1"] == nil || attempts["2"] == nil || len(spans) != 4 {
		t.Fatalf("spans: %d (request %v, wait %v, attempts %v); want a request, a wait and two attempts", len(spans), req != nil, wait != nil, len(attempts))
	}
	a1, a2 := attempts["1"], attempts["2"]
	if hex.EncodeToString(req.ParentSpanId) != hostSpanID {
		t.Errorf("request span's parent %x, want the host's %s", req.ParentSpanId, hostSpanID)
	}
	if req.Name != "tools/call fx__meta" || attr(req, AttrServer) != "fx" || attr(req, "gen_ai.tool.name") != "fx__meta" {
		t.Errorf("request span %q server %q tool %q", req.Name, attr(req, AttrServer), attr(req, "gen_ai.tool.name"))
	}
	for _, s := range []*tracepb.Span{a1, a2, wait} {
		if string(s.ParentSpanId) != string(req.SpanId) {
			t.Errorf("span %q (attempt %s) is not a child of the request span", s.Name, attr(s, AttrAttempt))
		}
		if attr(s, AttrServer) != "fx" {
			t.Errorf("span %q: server %q, want fx", s.Name, attr(s, AttrServer))
		}
	}
	if attr(a1, AttrGeneration) != "1" || attr(a2, AttrGeneration) != "2" {
		t.Errorf("attempts on generations %s and %s, want 1 and 2", attr(a1, AttrGeneration), attr(a2, AttrGeneration))
	}
	if attr(a2, AttrReplayReason) != "connection_lost" || attr(a1, AttrReplayReason) != "" {
		t.Errorf("replay reasons: attempt 1 %q, attempt 2 %q; want only attempt 2's, connection_lost", attr(a1, AttrReplayReason), attr(a2, AttrReplayReason))
	}
	if len(a2.Links) != 1 || string(a2.Links[0].SpanId) != string(a1.SpanId) {
		t.Errorf("attempt 2's links %v, want attempt 1", a2.Links)
	}
	if attr(a1, "error.type") != "connection_lost" {
		t.Errorf("attempt 1's error.type %q, want connection_lost", attr(a1, "error.type"))
	}
	if !(a1.StartTimeUnixNano <= wait.StartTimeUnixNano && wait.EndTimeUnixNano <= a2.StartTimeUnixNano) {
		t.Errorf("the wait [%d, %d] is not between attempt 1 (start %d) and attempt 2 (start %d)",
			wait.StartTimeUnixNano, wait.EndTimeUnixNano, a1.StartTimeUnixNano, a2.StartTimeUnixNano)
	}
	// Each process's parent is its attempt's span; the host's tracestate
	// passes on.
	for i, seen := range []map[string]any{first.Meta, second} {
		want := "00-" + hostTraceID + "-" + hex.EncodeToString([]*tracepb.Span{a1, a2}[i].SpanId) + "-01"
		if seen["traceparent"] != want || seen["tracestate"] != "host=1" {
			t.Errorf("process %d saw traceparent %v tracestate %v, want %s and host=1", i+1, seen["traceparent"], seen["tracestate"], want)
		}
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), hold) {
				t.Errorf("span %q records an argument: %s", s.Name, kv)
			}
		}
	}
}

// waitHeld waits for the meta tool to write its hold file (bounded by ctx).
func waitHeld(t *testing.T, ctx context.Context, path string) fixture.MetaSeen {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(path)
		var seen fixture.MetaSeen
		if err == nil && json.Unmarshal(b, &seen) == nil && seen.PID > 0 {
			return seen
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the server never took the call")
		}
	}
}
