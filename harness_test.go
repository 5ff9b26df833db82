package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// harness drives one supervisor over the scripted in-memory transport
// inside a synctest bubble: the supervisor's timers run on a mock clock the
// test advances, SDK-internal timers on the bubble's fake time, and
// synctest.Wait replaces every "eventually".
type harness struct {
	t   testingT
	clk *clock.Mock
	mem *transport.Memory
	set *tools.Set
	sup *Supervisor
	rec *recorder
}

// recorder keeps what the observer and the logger saw.
type recorder struct {
	mu    sync.Mutex
	trans []Transition
	logs  []logRecord
}

type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	l := logRecord{Level: rec.Level, Msg: rec.Message, Attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.logs = append(r.logs, l)
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// policy used by most rows: 1 s, 2 s, 4 s, 4 s … with 4 attempts. Its stability
// window is set to maxDelay, under the derived floor (backoff.MinStability),
// so the rows stay short; TestStabilityFloorEndsACrashLoop covers the floor.
var testPolicy = backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 4, Stability: 4 * time.Second}

// testingT is what the harness needs of a test; the model test passes a
// soft implementation that records the failure for rapid.
type testingT interface {
	Helper()
	Fatalf(format string, args ...any)
	Failed() bool
	Cleanup(func())
}

func newHarness(t testingT, tweak func(*Options), tools_ ...string) *harness {
	t.Helper()
	if len(tools_) == 0 {
		tools_ = []string{"echo", "hang"}
	}
	h := &harness{t: t, clk: clock.NewMock(), set: tools.NewSet(tools.Limits{}), rec: &recorder{}}
	h.mem = transport.NewMemory(tools_...)
	h.mem.Clock = h.clk
	opts := Options{
		Name:              "srv",
		Opener:            h.mem,
		Policy:            testPolicy,
		ConnectTimeout:    5 * time.Second,
		TerminationWindow: 3 * time.Second,
		Logger:            slog.New(h.rec),
		Clock:             h.clk,
		Sink:              h.set,
	}
	if tweak != nil {
		tweak(&opts)
	}
	sup, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.sup = sup
	// A failed row must still quiesce, or synctest reports a deadlock
	// instead of the failure.
	t.Cleanup(func() {
		if t.Failed() {
			h.forceDispose()
		}
	})
	sup.Subscribe(func(tr Transition) {
		h.rec.mu.Lock()
		h.rec.trans = append(h.rec.trans, tr)
		h.rec.mu.Unlock()
	})
	return h
}

// start runs Start and settles.
func (h *harness) start() error {
	h.t.Helper()
	err := h.sup.Start(context.Background())
	h.settle()
	return err
}

// startAsync runs Start on its own goroutine (for rows where the
// activation cannot settle without the test's help) and settles.
func (h *harness) startAsync() <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- h.sup.Start(context.Background()) }()
	h.settle()
	return errc
}

// settle waits until every goroutine of the bubble is blocked, then checks
// the invariants.
func (h *harness) settle() {
	h.t.Helper()
	synctest.Wait()
	h.checkInvariants()
}

// advance moves the supervisor's clock and settles.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clk.Add(d)
	h.settle()
}

func (h *harness) state() fsm.State { return h.sup.State().State }

// reestablish advances the clock a second at a time, at most five times,
// until the supervisor is established again after a loss, and fails the
// test if it is not.
func (h *harness) reestablish() {
	h.t.Helper()
	for range 5 {
		if h.state() == fsm.Established {
			break
		}
		h.advance(time.Second)
	}
	h.wantState(fsm.Established)
}

func (h *harness) wantState(want fsm.State) {
	h.t.Helper()
	if got := h.state(); got != want {
		h.t.Fatalf("state = %s, want %s (snapshot %+v)", got, want, h.sup.State())
	}
}

// steps renders the observed transitions as "from -event-> to" strings.
func (h *harness) steps() []string {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	out := make([]string, 0, len(h.rec.trans))
	for _, t := range h.rec.trans {
		out = append(out, fmt.Sprintf("%s -%s-> %s", t.From, t.Event, t.To))
	}
	return out
}

// messages lists the log messages at warn and above, plus "recovered".
func (h *harness) messages() []string {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	var out []string
	for _, l := range h.rec.logs {
		if l.Level >= slog.LevelWarn || l.Msg == "recovered" {
			out = append(out, l.Msg)
		}
	}
	return out
}

func (h *harness) logsNamed(msg string) []logRecord {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	var out []logRecord
	for _, l := range h.rec.logs {
		if l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// registered returns the public names registered for the server.
func (h *harness) registered() []string {
	_, defs, ok := h.set.Server("srv")
	if !ok {
		return nil
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.PublicName)
	}
	return out
}

// inspect runs f on the loop goroutine (the loop must be running).
func (h *harness) inspect(f func()) bool {
	done := make(chan error, 1)
	if !h.sup.send(message{kind: mInspect, probe: func() { f(); done <- nil }}) {
		return false
	}
	<-done
	return true
}

// checkInvariants asserts docs/design.md §4's I1–I6 (I7 is asserted by the rows
// that inject stale signals).
func (h *harness) checkInvariants() {
	h.t.Helper()
	snap := h.sup.State()
	// I1: at most one live transport, now and ever.
	if n := h.mem.MaxLive(); n > 1 {
		h.t.Fatalf("I1: %d generations were live at once", n)
	}
	// I2: tools belong to one generation, no name twice.
	if gen, defs, ok := h.set.Server("srv"); ok && len(defs) > 0 {
		seen := map[string]bool{}
		for _, d := range defs {
			if seen[d.PublicName] {
				h.t.Fatalf("I2: %s registered twice", d.PublicName)
			}
			seen[d.PublicName] = true
		}
		// Generation 0 is the catalog cache's hint (docs/design.md §20).
		if (gen == 0 && !snap.Cached) || gen > snap.Gen {
			h.t.Fatalf("I2: registration gen %d, supervisor gen %d", gen, snap.Gen)
		}
	}
	// I3: exhausted by budget or stuck, and disposed: nothing registered
	// (exhausted for a sign-in keeps its tools, as reconnect-disabled does).
	byBudget := h.sup.opts.policy.Enabled && !errors.Is(snap.LastErr, ErrSignInRequired)
	if snap.State == fsm.Disposed || (snap.State == fsm.Exhausted && byBudget) {
		if r := h.registered(); len(r) > 0 {
			h.t.Fatalf("I3: %s with tools registered: %v", snap.State, r)
		}
	}
	// I1 for idle: no process at all (docs/design.md §20).
	if snap.State == fsm.Idle {
		if n := h.mem.Live(); n != 0 {
			h.t.Fatalf("I1: idle with %d live transports", n)
		}
	}
	// I4: 0 ≤ attempt ≤ maxAttempts.
	if snap.Attempt < 0 || snap.Attempt > snap.MaxAttempts {
		h.t.Fatalf("I4: attempt %d of %d", snap.Attempt, snap.MaxAttempts)
	}
	// I5: exactly one retry timer in backing-off, none elsewhere.
	if snap.Started && snap.State != fsm.Disposed {
		var armed bool
		var st fsm.State
		if h.inspect(func() { armed, st = h.sup.lc.retryTimer != nil, h.sup.lc.m.State() }) {
			if armed != (st == fsm.BackingOff) {
				h.t.Fatalf("I5: retry timer armed=%v in %s", armed, st)
			}
		}
	}
	// I6: disposed: no timer, no live transport (goroutines: synctest and goleak).
	h.sup.mu.Lock()
	disposeErr := h.sup.mu.disposeErr
	h.sup.mu.Unlock()
	if snap.State == fsm.Disposed && disposeErr == nil {
		select {
		case <-h.sup.done:
		default:
			h.t.Fatalf("I6: disposed but the loop is running")
		}
		if h.sup.lc.retryTimer != nil || h.sup.lc.drainTimer != nil {
			h.t.Fatalf("I6: disposed with a timer armed")
		}
		if n := h.mem.Live(); n != 0 {
			h.t.Fatalf("I6: disposed with %d live transports", n)
		}
	}
}

// dispose disposes with a bounded wait and settles.
func (h *harness) dispose() error {
	h.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- h.sup.Dispose(context.Background()) }()
	synctest.Wait()
	select {
	case err := <-errc:
		h.checkInvariants()
		return err
	default:
	}
	// The drain waits on a timer of the mock clock.
	for range 100 {
		h.clk.Add(time.Second)
		synctest.Wait()
		select {
		case err := <-errc:
			h.checkInvariants()
			return err
		default:
		}
	}
	h.t.Fatalf("Dispose did not return within 100 s of mock time")
	return nil
}

// releaseQuarantine delivers every withheld close signal after Dispose
// and checks that the server's name is then released (R22): an
// incomplete shutdown keeps it quarantined only until the late signals.
func (h *harness) releaseQuarantine() {
	h.t.Helper()
	for n := uint64(1); n < 100; n++ {
		if g := h.mem.Gen(n); g != nil {
			g.ReleaseGone()
		}
	}
	synctest.Wait()
	select {
	case <-h.sup.Released():
	default:
		h.t.Fatalf("disposed, every close signal delivered, and the name is still not released")
	}
	if err := h.set.Reserve("srv"); err != nil {
		h.t.Fatalf("after the release: Reserve = %v", err)
	}
	h.set.Release("srv")
}

// forceDispose ends a failed row: it releases every withheld close
// signal and drains with a bounded amount of mock time.
func (h *harness) forceDispose() {
	errc := make(chan error, 1)
	go func() { errc <- h.sup.Dispose(context.Background()) }()
	for range 200 {
		for n := uint64(1); n < 100; n++ {
			if g := h.mem.Gen(n); g != nil {
				g.ReleaseGone()
				g.ReleaseLists()
			}
		}
		synctest.Wait()
		select {
		case <-errc:
			return
		default:
		}
		h.clk.Add(time.Second)
	}
}
