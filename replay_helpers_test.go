package mcpkeep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/mcpkeep/mcpkeep/transport"
)

// Supervisor-level replay: rebuild a recorded trace's inputs, run the real
// supervisor on them (in-memory transport, mock clock, synctest bubble,
// the harness of the race table), and compare the trace it produces with
// the recorded one.
//
// Inputs. Every recorded event is one of three kinds:
//
//   - caused from outside (closed, tools_changed, reconnect, dispose): the
//     replay performs it (Gen(n).Kill, Gen(n).NotifyToolsChanged,
//     Reconnect, Dispose) at its mapped time;
//   - a timer (retry_due, stable, failed by connect timeout, stuck,
//     drain_timeout): the replay advances the mock clock to the deadline the
//     supervisor armed, computed from the produced trace and the header;
//   - a consequence (connected, failed, released, drained): nothing to do;
//     it must already have been produced by the step before it.
//
// How each generation's attempt ends is scripted up front through
// Memory.Fault from the recorded outcome: connected → no fault; failed
// with a connect timeout → Hang; failed otherwise → ConnectErr; dispose
// while connecting → a Gate that never opens; a later stuck or
// drain_timeout → HoldGone.
//
// Time. Real offsets carry process spawn, handshake and reaping latencies
// the in-memory transport does not have, so absolute offsets drift apart.
// The replay is driven by order, and timing is mapped by gaps: an outside
// event happens on the mock clock the recorded gap after the produced
// previous event, but never at or past a deadline the supervisor has armed
// (the recording says that timer did not fire first); timers fire exactly
// at their deadlines. Comparison is exact for the sequence, from, to,
// event, gen, attempt and guard; the gap to the previous event and
// next_retry_ms must agree within replayTolerance; the err text (OS
// error strings) is ignored.

// replayTolerance bounds |produced gap − recorded gap| and the difference
// of next_retry_ms. It absorbs a real run's spawn + handshake + reaping
// latency at one step (a few ms unloaded, tens under -race or load).
const replayTolerance = 100 * time.Millisecond

type replayKind int

const (
	kindConsequence replayKind = iota
	kindOutside
	kindTimer
)

// replayPlan is what the replay derives from a recorded trace before running.
type replayPlan struct {
	hdr    trace.Header
	cfg    trace.Config
	events []trace.Event
	faults map[uint64]transport.Fault
	kinds  []replayKind
	jitter []float64 // the Rand's values, one per retry armed
}

// planReplay derives the inputs. It rejects what it cannot rebuild.
func planReplay(h trace.Header, evs []trace.Event) (*replayPlan, error) {
	p := &replayPlan{hdr: h, events: evs, faults: map[uint64]transport.Fault{}}
	if len(evs) == 0 {
		return nil, fmt.Errorf("no events")
	}
	server := evs[0].Server
	p.cfg = h.For(server)
	if evs[0].Gen != 1 || evs[0].From != fsm.Connecting {
		return nil, fmt.Errorf("the trace must start at gen 1 in connecting (subscribe before Start), got gen %d in %s", evs[0].Gen, evs[0].From)
	}
	gate := make(chan struct{}) // never closed: the attempt ends by its context
	pol := p.cfg.Policy.Backoff()
	for i, e := range evs {
		if e.Server != server {
			return nil, fmt.Errorf("event %d: a second server %q (replay one server at a time)", i+1, e.Server)
		}
		k := kindConsequence
		switch e.Event {
		case fsm.Closed, fsm.Reconnect, fsm.Dispose:
			k = kindOutside
		case fsm.ToolsChanged:
			if e.From != fsm.Established {
				return nil, fmt.Errorf("event %d: tools_changed while %s is not replayable", i+1, e.From)
			}
			k = kindOutside
		case fsm.RetryDue, fsm.Stable:
			k = kindTimer
		case fsm.Stuck, fsm.DrainTimeout:
			k = kindTimer
			f := p.faults[e.Gen]
			f.HoldGone = true
			p.faults[e.Gen] = f
		case fsm.Failed:
			f := p.faults[e.Gen]
			if e.IsConnectTimeout() {
				f.Hang = true
				k = kindTimer
			} else {
				f.ConnectErr = transport.ErrScripted
			}
			p.faults[e.Gen] = f
		case fsm.Released:
			if e.To == fsm.BackingOff {
				// Reproduce the recorded jitter: u = (d − wait)/(d·j).
				u := 0.0
				if d := pol.Delay(e.Attempt); pol.Jitter > 0 && d > 0 {
					u = min(max(float64(d-e.NextRetry)/(float64(d)*pol.Jitter), 0), 0.999999)
				}
				p.jitter = append(p.jitter, u)
			}
		}
		if e.Event == fsm.Dispose && e.From == fsm.Connecting {
			f := p.faults[e.Gen]
			f.Gate = gate
			p.faults[e.Gen] = f
		}
		p.kinds = append(p.kinds, k)
	}
	return p, nil
}

// replaySeqRand returns the planned jitter values in order, then 0.
type replaySeqRand struct{ u []float64 }

func (r *replaySeqRand) Float64() float64 {
	if len(r.u) == 0 {
		return 0
	}
	u := r.u[0]
	r.u = r.u[1:]
	return u
}

// replayRun is one supervisor-level replay inside a synctest bubble.
type replayRun struct {
	t       *testing.T
	plan    *replayPlan
	h       *harness
	hdr     trace.Header // the produced trace's header (mock clock)
	buf     bytes.Buffer
	w       *trace.Writer
	dispose chan error
}

// replaySupervisor runs the plan and returns the produced events and the
// produced trace file. Call inside synctest.Test.
func replaySupervisor(t *testing.T, plan *replayPlan) ([]trace.Event, []byte) {
	t.Helper()
	cfg := plan.cfg
	h := newHarness(t, func(o *Options) {
		o.Policy = cfg.Policy.Backoff()
		o.ConnectTimeout = time.Duration(cfg.ConnectTimeoutMs)
		o.TerminationWindow = time.Duration(cfg.TerminationWindowMs)
		o.Rand = &replaySeqRand{u: plan.jitter}
	})
	h.mem.Fault = func(gen uint64) transport.Fault { return plan.faults[gen] }
	r := &replayRun{t: t, plan: plan, h: h, dispose: make(chan error, 1)}
	r.hdr = TraceHeader(h.clk.Now(), h.sup)
	r.w = trace.NewWriter(&r.buf, r.hdr)
	h.sup.Subscribe(TraceObserver(r.w))

	startErr := h.startAsync()
	for i, e := range plan.events {
		if got := r.produced(); len(got) > i {
			continue // a consequence of an earlier step
		}
		switch plan.kinds[i] {
		case kindConsequence:
			t.Fatalf("replay diverged at event %d: recorded %s, the supervisor produced nothing more\nproduced:\n%s",
				i+1, replayDescribe(e), replayDescribeAll(r.produced()))
		case kindTimer:
			r.advanceTo(r.deadline(e))
		case kindOutside:
			r.advanceTo(r.outsideAt(i))
			r.perform(e)
		}
		if got := r.produced(); len(got) <= i {
			t.Fatalf("replay diverged at event %d: recorded %s, the supervisor produced nothing\nproduced:\n%s",
				i+1, replayDescribe(e), replayDescribeAll(got))
		}
	}
	got := r.produced()
	// Quiesce: a trace that does not end disposed is disposed now (its
	// further events are not compared).
	if h.state() != fsm.Disposed {
		if err := h.dispose(); err != nil {
			t.Logf("final dispose: %v", err)
		}
	}
	select {
	case err := <-r.dispose:
		if err != nil {
			t.Logf("Dispose returned %v", err)
		}
	default:
	}
	select {
	case <-startErr:
	default:
		t.Fatalf("Start never returned")
	}
	if err := r.w.Close(); err != nil {
		t.Fatal(err)
	}
	return got, r.buf.Bytes()
}

// produced converts what the supervisor emitted so far.
func (r *replayRun) produced() []trace.Event {
	r.h.rec.mu.Lock()
	defer r.h.rec.mu.Unlock()
	out := make([]trace.Event, 0, len(r.h.rec.trans))
	for _, tr := range r.h.rec.trans {
		out = append(out, TraceEvent(r.hdr, tr))
	}
	return out
}

func (r *replayRun) now() time.Duration { return r.h.clk.Now().Sub(r.hdr.Started) }

func (r *replayRun) advanceTo(at time.Duration) {
	if d := at - r.now(); d > 0 {
		r.h.advance(d)
	} else {
		r.h.settle()
	}
}

// entered returns the offset at which the produced trace last entered
// state s (a non-internal transition), or 0 for the initial connecting.
func replayEntered(got []trace.Event, s fsm.State) time.Duration {
	for i := len(got) - 1; i >= 0; i-- {
		if got[i].To == s && got[i].From != s {
			return got[i].Offset
		}
	}
	return 0
}

// deadline is when the timer behind the timer event e is due on the
// produced (mock) timeline.
func (r *replayRun) deadline(e trace.Event) time.Duration {
	got := r.produced()
	cfg := r.plan.cfg
	last := trace.Event{}
	if len(got) > 0 {
		last = got[len(got)-1]
	}
	switch e.Event {
	case fsm.RetryDue:
		return last.Offset + last.NextRetry
	case fsm.Stable:
		return replayEntered(got, fsm.Established) + cfg.Policy.Backoff().StabilityWindow()
	case fsm.Failed: // connect timeout
		return replayEntered(got, fsm.Connecting) + time.Duration(cfg.ConnectTimeoutMs)
	case fsm.Stuck:
		return replayEntered(got, fsm.Lost) + time.Duration(cfg.TerminationWindowMs)
	case fsm.DrainTimeout:
		return replayEntered(got, fsm.Draining) + time.Duration(cfg.TerminationWindowMs)
	}
	r.t.Fatalf("no timer behind %s", e.Event)
	return 0
}

// pending is the earliest deadline armed now, or -1: an outside event
// must happen before it, since the recording shows it did not fire first.
func (r *replayRun) pending() time.Duration {
	got := r.produced()
	if len(got) == 0 {
		return time.Duration(r.plan.cfg.ConnectTimeoutMs)
	}
	last := got[len(got)-1]
	cfg := r.plan.cfg
	switch last.To {
	case fsm.Connecting:
		return replayEntered(got, fsm.Connecting) + time.Duration(cfg.ConnectTimeoutMs)
	case fsm.BackingOff:
		return last.Offset + last.NextRetry
	case fsm.Established:
		for i := len(got) - 1; i >= 0 && got[i].Gen == last.Gen; i-- {
			if got[i].Event == fsm.Stable {
				return -1 // fired already
			}
		}
		return replayEntered(got, fsm.Established) + cfg.Policy.Backoff().StabilityWindow()
	case fsm.Lost:
		return replayEntered(got, fsm.Lost) + time.Duration(cfg.TerminationWindowMs)
	case fsm.Draining:
		return replayEntered(got, fsm.Draining) + time.Duration(cfg.TerminationWindowMs)
	}
	return -1
}

// outsideAt maps recorded event i (an outside event) onto the mock clock:
// the recorded gap after the produced previous event, kept before any
// armed deadline and never in the past.
func (r *replayRun) outsideAt(i int) time.Duration {
	evs := r.plan.events
	at := evs[i].Offset
	if i > 0 {
		got := r.produced()
		at = got[i-1].Offset + (evs[i].Offset - evs[i-1].Offset)
	}
	if dl := r.pending(); dl >= 0 && at >= dl {
		at = dl - time.Nanosecond
	}
	return max(at, r.now())
}

// perform injects outside event e.
func (r *replayRun) perform(e trace.Event) {
	h := r.h
	switch e.Event {
	case fsm.Closed:
		g := h.mem.Gen(e.Gen)
		if g == nil {
			r.t.Fatalf("closed: gen %d was never opened", e.Gen)
		}
		g.Kill()
	case fsm.ToolsChanged:
		h.mem.Gen(e.Gen).NotifyToolsChanged()
	case fsm.Reconnect:
		if err := h.sup.Reconnect(); err != nil {
			r.t.Fatalf("Reconnect: %v", err)
		}
	case fsm.Dispose:
		go func() { r.dispose <- h.sup.Dispose(context.Background()) }()
	}
	h.settle()
}

func replayDescribe(e trace.Event) string {
	return fmt.Sprintf("t=%s gen %d %s -%s-> %s attempt %d", trace.Ms(e.Offset), e.Gen, e.From, e.Event, e.To, e.Attempt)
}

func replayDescribeAll(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + replayDescribe(e) + "\n")
	}
	return b.String()
}

// replayComparable reduces events to what replay compares: offsets become the
// gap to the previous event, the server name and the err text go.
func replayComparable(evs []trace.Event) []trace.Event {
	out := make([]trace.Event, len(evs))
	var prev time.Duration
	for i, e := range evs {
		e.Offset, prev = e.Offset-prev, e.Offset
		e.Server = ""
		d := map[string]string{}
		if g, ok := e.Detail[trace.DetailGuard]; ok {
			d[trace.DetailGuard] = g
		}
		if e.IsConnectTimeout() {
			d[trace.DetailCause] = trace.CauseConnectTimeout
		}
		e.Detail = nil
		if len(d) > 0 {
			e.Detail = d
		}
		out[i] = e
	}
	return out
}

// diffReplay compares produced with recorded events.
func diffReplay(recorded, produced []trace.Event, tol time.Duration) string {
	within := cmp.Comparer(func(a, b time.Duration) bool { return (a-b) <= tol && (b-a) <= tol })
	return cmp.Diff(replayComparable(recorded), replayComparable(produced), within)
}

func replayReadFile(t *testing.T, path string) (trace.Header, []trace.Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, evs, err := trace.Read(f)
	if err != nil {
		t.Fatalf("%s:%v", path, err)
	}
	return h, evs
}
