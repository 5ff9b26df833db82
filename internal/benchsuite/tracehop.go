package benchsuite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Section 7's tracing rows (issue 37, docs/design.md §27): the hop with
// tracing off and no trace context from the host (the code path as it
// was before tracing), off with a host traceparent, and on at 100%
// sampling exporting OTLP/HTTP to a receiver in this process.

// hostTraceparent is the W3C trace context the host sends (sampled).
const hostTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// traceVariant is one way of calling the fixture's echo for these rows.
type traceVariant struct {
	name   string
	h      *host
	prefix string
	meta   mcp.Meta     // the request's _meta (nil: none)
	self   *probeClient // the proxy's probe (nil: direct)
}

func (v *traceVariant) call(ctx context.Context) error {
	res, err := v.h.cs.CallTool(ctx, &mcp.CallToolParams{Name: v.prefix + "echo", Arguments: echoCall, Meta: v.meta})
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error: %s", v.name, resultText(res))
	}
	return err
}

// The variants, in this order.
const (
	tvDirect = iota // the host calls the fixture itself
	tvBase          // proxy, tracing off, no trace context: the baseline
	tvOffTP         // the same proxy and host session, with a traceparent
	tvOn            // a second proxy, tracing on (100%), with a traceparent
	tvCount
)

// traceHopResult is what the tracing rows show.
type traceHopResult struct {
	protocol string
	calls    [tvCount]durations
	block    int             // calls per block
	baseP50s []time.Duration // the baseline's p50 in each of its blocks
	measured int             // calls of the per-call figures
	per      [tvCount]perCall
	exports  int // OTLP/HTTP requests the receiver got
	spans    int // spans in them
}

// otlpSink is an OTLP/HTTP receiver that answers every export with an
// empty success and keeps the bodies, decoded only after the timed calls.
type otlpSink struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// count decodes what arrived: requests and spans.
func (s *otlpSink) count() (requests, spans int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return len(s.bodies), spans, fmt.Errorf("an export does not decode: %w", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans += len(ss.Spans)
			}
		}
	}
	return len(s.bodies), spans, nil
}

// tracedProxyCmd is proxyCmd with the caller's OTEL_* variables removed
// (so tracing is off unless env turns it on) and env added.
func (b *proxyBuild) tracedProxyCmd(cfg string, env ...string) *exec.Cmd {
	cmd := b.proxyCmd(cfg)
	var clean []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			clean = append(clean, kv)
		}
	}
	cmd.Env = append(clean, env...)
	return cmd
}

// runTraceHop measures the tracing rows: four variants interleaved in
// blocks (the order rotating and reversed every other round), after
// warm-up calls, then each proxy variant's allocations and CPU per call.
func runTraceHop(ctx context.Context, cfg Config, b *proxyBuild) (res *traceHopResult, err error) {
	sink := &otlpSink{}
	recv := httptest.NewServer(sink)
	defer recv.Close()

	offProbe := filepath.Join(b.dir, "trace-off-proxy.addr")
	onProbe := filepath.Join(b.dir, "trace-on-proxy.addr")
	for _, f := range []string{offProbe, onProbe} {
		_ = os.Remove(f)
	}
	conf := filepath.Join(b.dir, "trace-config.json")
	if err := writeConfig(conf, map[string]any{"fx": fixtureServer("")}); err != nil {
		return nil, err
	}
	cctx, cancel := within(ctx)
	defer cancel()
	var hosts []*host
	closeAll := func() {
		for _, h := range hosts {
			h.close()
		}
		hosts = nil
	}
	defer closeAll()
	connect := func(cmd *exec.Cmd) (*host, error) {
		h, err := connectHost(cctx, cmd, "")
		if err == nil {
			hosts = append(hosts, h)
		}
		return h, err
	}
	dh, err := connect(fixtureCmd())
	if err != nil {
		return nil, err
	}
	offH, err := connect(b.tracedProxyCmd(conf, probe.Env+"="+offProbe))
	if err != nil {
		return nil, err
	}
	onH, err := connect(b.tracedProxyCmd(conf, probe.Env+"="+onProbe,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_TRACES_SAMPLER=always_on", "OTEL_EXPORTER_OTLP_COMPRESSION=none"))
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		if _, err := listAll(cctx, h.cs); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
	}
	offP, err := waitProbe(cctx, offProbe)
	if err != nil {
		return nil, err
	}
	defer offP.close()
	onP, err := waitProbe(cctx, onProbe)
	if err != nil {
		return nil, err
	}
	defer onP.close()
	tp := mcp.Meta{"traceparent": hostTraceparent}
	vs := [tvCount]*traceVariant{
		tvDirect: {name: "direct", h: dh},
		tvBase:   {name: "off, no trace context", h: offH, prefix: "fx__", self: offP},
		tvOffTP:  {name: "off, traceparent", h: offH, prefix: "fx__", meta: tp, self: offP},
		tvOn:     {name: "on 100%, traceparent", h: onH, prefix: "fx__", meta: tp, self: onP},
	}
	res = &traceHopResult{protocol: offH.cs.InitializeResult().ProtocolVersion, block: 100}

	for _, v := range vs {
		for range 50 {
			if err := v.call(ctx); err != nil {
				return nil, fmt.Errorf("%s warm-up: %w", v.name, err)
			}
		}
	}
	for round := 0; len(res.calls[tvBase]) < cfg.ProxyCalls; round++ {
		for j := range tvCount {
			i := (round + j) % tvCount
			if round%2 == 1 {
				i = (round + tvCount - 1 - j) % tvCount
			}
			var blk durations
			for k := 0; k < res.block && len(res.calls[i]) < cfg.ProxyCalls; k++ {
				t0 := time.Now()
				if err := vs[i].call(ctx); err != nil {
					return nil, fmt.Errorf("%s: %w", vs[i].name, err)
				}
				d := time.Since(t0)
				res.calls[i] = append(res.calls[i], d)
				blk = append(blk, d)
			}
			if i == tvBase && len(blk) > 0 {
				res.baseP50s = append(res.baseP50s, blk.pct(50))
			}
		}
	}
	cfg.progress("  tracing: %d echo calls per variant (%s)", len(res.calls[tvBase]), res.protocol)

	res.measured = max(cfg.ProxyCalls/2, 100)
	for _, i := range []int{tvBase, tvOffTP, tvOn} {
		v := vs[i]
		pc, err := measurePer(res.measured, func() error { return v.call(ctx) }, v.self)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		res.per[i] = pc[0]
	}
	// The proxies exit (the traced one flushing its spans) before the
	// receiver counts what came.
	closeAll()
	if res.exports, res.spans, err = sink.count(); err != nil {
		return nil, err
	}
	if res.spans == 0 {
		return nil, fmt.Errorf("tracing on: the receiver got no spans (%d requests)", res.exports)
	}
	return res, nil
}
