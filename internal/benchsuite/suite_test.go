package benchsuite

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	lfsm "github.com/looplab/fsm"
	"github.com/mcpkeep/mcpkeep/fsm"
)

func TestPercentile(t *testing.T) {
	var d durations
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(201-i)*time.Millisecond) // unsorted
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 100 * time.Millisecond}, {99, 198 * time.Millisecond}, {100, 200 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := d.pct(c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if d[0] != 200*time.Millisecond {
		t.Error("pct sorted its receiver")
	}
	if got := (durations{}).pct(50); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
}

func TestMaxInWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, c := range []struct {
		ts   []time.Time
		want int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 99, 100), 2}, // half-open window: 100 is outside [0, 100)
		{at(500, 0, 50, 120, 130, 140), 4},
		{at(0, 0, 0), 3},
	} {
		if got := maxInWindow(c.ts, 100*time.Millisecond); got != c.want {
			t.Errorf("maxInWindow(%v) = %d, want %d", c.ts, got, c.want)
		}
	}
	if got := span(at(30, 10, 20)); got != 20*time.Millisecond {
		t.Errorf("span = %v", got)
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Microsecond:  "850 µs",
		1500 * time.Microsecond: "1.50 ms",
		250 * time.Millisecond:  "250 ms",
		12 * time.Second:        "12.0 s",
		-2 * time.Millisecond:   "-2.00 ms",
	} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
	if got := fmtBytes(-1536); got != "-1.5 KiB" {
		t.Errorf("fmtBytes = %q", got)
	}
	if got := fmtRatio(1, 0); got != "—" {
		t.Errorf("fmtRatio by zero = %q", got)
	}
}

func TestReportMarkdown(t *testing.T) {
	rep := &Report{Machine: Machine{CPU: "cpu", Cores: 2, Go: "go", OS: "os", Date: time.Unix(0, 0)}, Wall: time.Minute}
	rep.add(Row{Section: "s", Metric: "a|b", Mcpkeep: "1", Verdict: OK})
	rep.add(Row{Section: "s", Metric: "m", Mcpkeep: "2", Target: "≤ 1", Verdict: Missed, Reason: "too slow"})
	rep.note("s", "how")
	var md, txt bytes.Buffer
	rep.WriteMarkdown(&md)
	rep.WriteText(&txt)
	for _, want := range []string{`a\|b`, "MISSED: too slow", "**1 target(s) missed**", "- **s**: how", "| cores | 2 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(txt.String(), "1 target(s) missed") {
		t.Errorf("text lacks the misses:\n%s", txt.String())
	}
}

// The raw looplab baseline walks the same table the same way as Fire.
func TestLooplabEquivalent(t *testing.T) {
	steps, err := looplabSteps()
	if err != nil {
		t.Fatal(err)
	}
	lf := lfsm.NewFSM(fsm.Initial.String(), looplabEvents(), nil)
	m := fsm.New()
	for range 2 {
		for i, name := range steps {
			c := fsmCycle[i]
			_, ferr := m.Fire(c.ev, c.f)
			if name == "" {
				if ferr == nil {
					t.Fatalf("step %d: Fire accepted a step the baseline drops", i)
				}
				continue
			}
			if err := lf.Event(context.Background(), name); err != nil {
				if _, ok := err.(lfsm.NoTransitionError); !ok {
					t.Fatalf("step %d (%s): %v", i, name, err)
				}
			}
			if ferr != nil || lf.Current() != m.State().String() {
				t.Fatalf("step %d: looplab in %s, Fire in %s (%v)", i, lf.Current(), m.State(), ferr)
			}
		}
	}
}

// A small run of the in-memory sections.
func TestSmokeMemory(t *testing.T) {
	cfg := Config{MemCycles: 30, Supervisors: 5, ScaleDelay: 20 * time.Millisecond}
	ms, err := runMemSoak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ms.overlaps != 0 || ms.opens != ms.warmup+ms.cycles+1 {
		t.Errorf("opens %d, overlaps %d", ms.opens, ms.overlaps)
	}
	sc, err := runScale(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sc.runs {
		if len(r.arrivals) != 5 || len(r.scheduled) != 5 || r.cpu <= 0 {
			t.Errorf("jitter %.1f: %d arrivals, %d scheduled, cpu %v", r.jitter, len(r.arrivals), len(r.scheduled), r.cpu)
		}
	}
}

// A small run of the real-process sections: the test binary is the
// fixture (main_test.go).
func TestSmokeProcesses(t *testing.T) {
	cfg := Config{Crashes: 2, SDKGrandchildSamples: 1, SDKGrandchildCap: 100 * time.Millisecond, ProcCycles: 3}
	sr, err := runStdio(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.plain) != 2 || len(sr.grand) != 2 || len(sr.sdkPlain) != 2 || sr.sdkGrandCaps != 1 {
		t.Errorf("samples: %d plain, %d grandchild, %d CommandTransport, %d capped", len(sr.plain), len(sr.grand), len(sr.sdkPlain), sr.sdkGrandCaps)
	}
	// The retry timer is armed before the backing-off transition is
	// observed (and stamped), so the redial may start a little less than
	// retryDelay after that stamp.
	const stampSlack = time.Millisecond
	for _, s := range sr.plain {
		if !(0 < s.exit && s.exit < s.lost && s.lost <= s.backingOff && s.backingOff+retryDelay <= s.openStart+stampSlack &&
			s.openStart < s.openEnd && s.openEnd < s.established && s.established <= s.callOK) {
			t.Errorf("phases out of order: %+v", s)
		}
	}
	ps, err := runProcSoak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ps.overlaps != 0 || ps.ctlOver == 0 || ps.fdAfter > ps.fdBefore || ps.chAfter+ps.zAfter > ps.chBefore+ps.zBefore {
		t.Errorf("process soak: %+v", *ps)
	}
}

// A small run of the proxy sections: builds ./cmd/mcpkeep, and the test
// binary is the fixture (main_test.go).
func TestSmokeProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ./cmd/mcpkeep")
	}
	ctx := context.Background()
	b, err := buildProxy(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ProxyCalls: 20, RelayCalls: 5, StartupServers: 3, StartupRuns: 1}
	hr, rr, err := runProxyHop(ctx, cfg, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(hr.calls[0]) != 20 || len(hr.calls[1]) != 20 || hr.proxy.allocs <= 0 || hr.directServer.allocs <= 0 {
		t.Errorf("hop: %d + %d calls, %.1f allocations per relayed call, %.1f in the fixture", len(hr.calls[0]), len(hr.calls[1]), hr.proxy.allocs, hr.directServer.allocs)
	}
	if len(hr.bareCalls[1]) != 20 || &hr.bareCalls[0][0] != &hr.calls[0][0] {
		t.Errorf("bare relay: %d calls, want 20 in the same blocks as the direct calls (and beside the same ones)", len(hr.bareCalls[1]))
	}
	sl, err := runStateless(ctx, Config{ProxyCalls: 20, StatelessHosts: 3}, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(sl.calls[0]) != 10 || len(sl.calls[1]) != 10 || sl.front.allocs <= 0 || sl.manyCalls[0] != 3*statelessCallsEach*2 || sl.manyCalls[1] != sl.manyCalls[0] {
		t.Errorf("stateless front: %d + %d calls, %.1f allocations per request, %v calls at once", len(sl.calls[0]), len(sl.calls[1]), sl.front.allocs, sl.manyCalls)
	}
	if len(rr.protos) != 2 || rr.sampleAnswered[0] != 10 || rr.sampleAnswered[1] != 10 {
		t.Errorf("relay: protocols %v, sampling answered %v", rr.protos, rr.sampleAnswered)
	}
	for _, pr := range rr.progress {
		if pr.got[0] != pr.sent[0] || len(pr.first[0]) != 5 {
			t.Errorf("direct progress: %d of %d", pr.got[0], pr.sent[0])
		}
	}
	st, err := runStartup(ctx, cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.proxy) != 1 || len(st.direct) != 1 || st.tools == 0 {
		t.Errorf("startup: %+v", *st)
	}
	ss, err := runSessions(ctx, cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(sessionCounts) * len(sessionServers); len(ss.cells) != want {
		t.Errorf("host sessions: %d cells; want %d", len(ss.cells), want)
	}
	for _, c := range ss.cells {
		if c.rss == 0 {
			t.Errorf("host sessions: no RSS for %+v", c)
		}
	}
}

func TestOnly(t *testing.T) {
	if err := CheckOnly([]string{"proxy", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckOnly([]string{"nope"}); err == nil {
		t.Fatal("an unknown section was accepted")
	}
	cfg := Config{Only: []string{"relay", "3"}}
	for key, want := range map[string]bool{"relay": true, "call": true, "proxy": false, "detection": false} {
		if cfg.wants(key) != want {
			t.Errorf("wants(%q) = %v", key, !want)
		}
	}
	if !(Config{}).wants("binary") {
		t.Error("no filter must run everything")
	}
}

// A small run of the tracing rows: every traced call reaches the
// receiver as a request span and an attempt span (sampling 100%), and
// tracing on allocates more per call than off.
func TestSmokeTraceHop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ./cmd/mcpkeep")
	}
	ctx := context.Background()
	b, err := buildProxy(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ProxyCalls: 20}
	tr, err := runTraceHop(ctx, cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tr.calls {
		if len(c) != 20 {
			t.Errorf("variant %d: %d calls", i, len(c))
		}
	}
	if len(tr.baseP50s) == 0 {
		t.Error("no block p50 of the baseline")
	}
	if traced := 50 + 20 + tr.measured; tr.spans < 2*traced {
		t.Errorf("%d spans in %d exports for %d traced calls; want 2 per call", tr.spans, tr.exports, traced)
	}
	if tr.per[tvBase].allocs <= 0 || tr.per[tvOn].allocs <= tr.per[tvOffTP].allocs {
		t.Errorf("allocations per call: off %.1f, off with traceparent %.1f, on %.1f", tr.per[tvBase].allocs, tr.per[tvOffTP].allocs, tr.per[tvOn].allocs)
	}
	rep := &Report{}
	traceRows(rep, tr)
	if len(rep.Rows) != 4 || rep.Rows[3].Verdict == Info {
		t.Errorf("rows: %+v", rep.Rows)
	}
}
