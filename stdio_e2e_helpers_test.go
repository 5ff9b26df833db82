//go:build unix

package mcpkeep

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real-process end-to-end rig: a Supervisor over transport.Stdio
// running the fixture (this test binary re-executed, see main_test.go).

const (
	// e2eWait bounds every wait of these tests.
	e2eWait = 10 * time.Second
	// e2eGrace is each of the Stdio's three teardown graces.
	e2eGrace = 200 * time.Millisecond
	// e2eSampleEvery is the period of the process sampler.
	e2eSampleEvery = 2 * time.Millisecond
	// e2eReapWait bounds the final poll for processes to be reaped.
	e2eReapWait = 2 * time.Second
	// e2eFixtureTools is how many tools the fixture serves.
	e2eFixtureTools = 23
)

// e2ePolicy keeps outages short: delays 20, 40, 80 ms, then give up.
var e2ePolicy = backoff.Policy{Enabled: true, InitialDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 3}

// e2eModes maps generation n to ms[n-1], repeating the last mode.
func e2eModes(ms ...string) func(gen uint64) string {
	return func(gen uint64) string {
		i := int(min(gen, uint64(len(ms)))) - 1
		return ms[max(i, 0)]
	}
}

// e2eFeed is an append-only list that a test can wait on.
type e2eFeed[T any] struct {
	mu    sync.Mutex
	items []T
	tick  chan struct{} // signalled on every add
}

func newE2EFeed[T any]() *e2eFeed[T] { return &e2eFeed[T]{tick: make(chan struct{}, 1)} }

func (f *e2eFeed[T]) add(v T) {
	f.mu.Lock()
	f.items = append(f.items, v)
	f.mu.Unlock()
	select {
	case f.tick <- struct{}{}:
	default:
	}
}

func (f *e2eFeed[T]) list() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]T(nil), f.items...)
}

func (f *e2eFeed[T]) find(pred func(T) bool) (T, bool) {
	for _, v := range f.list() {
		if pred(v) {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// wait returns the first item matching pred, waiting up to e2eWait.
func (f *e2eFeed[T]) wait(t *testing.T, what string, pred func(T) bool) T {
	t.Helper()
	deadline := time.NewTimer(e2eWait)
	defer deadline.Stop()
	for {
		if v, ok := f.find(pred); ok {
			return v
		}
		select {
		case <-f.tick:
		case <-deadline.C:
			t.Fatalf("no %s within %v", what, e2eWait)
		}
	}
}

// e2eRecord is one log record with its attributes (With attributes
// included) rendered as strings.
type e2eRecord struct {
	At    time.Time
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

type e2eHandler struct {
	feed *e2eFeed[e2eRecord]
	with []slog.Attr
	hook func(e2eRecord) // runs before the record is kept
}

func (h *e2eHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *e2eHandler) Handle(_ context.Context, r slog.Record) error {
	rec := e2eRecord{At: time.Now(), Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.with {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	if h.hook != nil {
		h.hook(rec)
	}
	h.feed.add(rec)
	return nil
}
func (h *e2eHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &e2eHandler{feed: h.feed, with: append(append([]slog.Attr(nil), h.with...), as...), hook: h.hook}
}
func (h *e2eHandler) WithGroup(string) slog.Handler { return h }

// e2eProc is one process the opener started.
type e2eProc struct {
	Gen    uint64
	Pid    int // also its process group id
	Mode   string
	Opened time.Time // when Open returned
}

// e2eOpener is a transport.Stdio per generation running the fixture in the
// generation's mode. It records every process it starts, and checks that no
// earlier generation's process group is alive when a generation opens.
type e2eOpener struct {
	t       *testing.T
	mode    func(gen uint64) string
	command string // replaces the fixture's command when set
	logger  *slog.Logger
	procs   *e2eFeed[e2eProc]
	opens   atomic.Int32 // Open calls, successful or not
}

func (o *e2eOpener) stdio(gen uint64) *transport.Stdio {
	path, args, env := fixture.CommandEnv(o.mode(gen))
	if o.command != "" {
		path, args = o.command, nil
	}
	return &transport.Stdio{
		Command: path, Args: args, Env: env,
		Logger: o.logger, Server: "fx",
		StdinGrace: e2eGrace, TermGrace: e2eGrace, KillGrace: e2eGrace,
	}
}

// TerminationWindow forwards the Stdio's window, as the supervisor would
// take it from a bare Stdio opener.
func (o *e2eOpener) TerminationWindow() time.Duration { return o.stdio(1).TerminationWindow() }

func (o *e2eOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	o.opens.Add(1)
	for _, p := range o.procs.list() {
		if fixture.Alive(p.Pid) || fixture.GroupAlive(p.Pid) {
			o.t.Errorf("gen %d opens while gen %d's process group %d is alive (I1)", gen, p.Gen, p.Pid)
		}
	}
	tg, err := o.stdio(gen).Open(ctx, gen)
	if err != nil {
		return nil, err
	}
	p, ok := tg.(interface{ Pid() int })
	if !ok {
		o.t.Errorf("stdio generation %T has no Pid() int", tg)
		return tg, nil
	}
	o.procs.add(e2eProc{Gen: gen, Pid: p.Pid(), Mode: o.mode(gen), Opened: time.Now()})
	return tg, nil
}

// e2eConfig configures one rig.
type e2eConfig struct {
	Mode    func(gen uint64) string // nil: normal in every generation
	Command string                  // replaces the fixture (missing binary)
	Tweak   func(*Options)
	// LogHook sees every record of the supervisor's log on the logging
	// goroutine (the loop) before it is kept; it may hold the loop.
	LogHook func(e2eRecord)
}

// e2e is one supervised fixture server plus everything watching it.
type e2e struct {
	t     *testing.T
	op    *e2eOpener
	set   *tools.Set
	sup   *Supervisor
	logs  *e2eFeed[e2eRecord] // the supervisor's
	xlogs *e2eFeed[e2eRecord] // the Stdio's: stderr lines, teardown steps
	trans *e2eFeed[Transition]

	started atomic.Bool
	// wantTools, when > 0, is how many tools of "fx" the sampler must see
	// registered at every sample.
	wantTools atomic.Int32

	mu    sync.Mutex
	extra []int // further pids to prove gone (grandchildren)

	// Sampler results; read after stopSampler.
	stop        chan struct{}
	stopped     chan struct{}
	samples     int
	maxLive     int
	overlap     string // the first sample with two live processes
	toolsBroken string // the first sample with wrong registrations
}

func newE2E(t *testing.T, c e2eConfig) *e2e {
	t.Helper()
	r := &e2e{
		t:       t,
		set:     tools.NewSet(tools.Limits{}),
		logs:    newE2EFeed[e2eRecord](),
		xlogs:   newE2EFeed[e2eRecord](),
		trans:   newE2EFeed[Transition](),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	mode := c.Mode
	if mode == nil {
		mode = e2eModes("normal")
	}
	r.op = &e2eOpener{
		t: t, mode: mode, command: c.Command,
		logger: slog.New(&e2eHandler{feed: r.xlogs}),
		procs:  newE2EFeed[e2eProc](),
	}
	opts := Options{
		Name:           "fx",
		Opener:         r.op,
		Policy:         e2ePolicy,
		ConnectTimeout: 5 * time.Second,
		Logger:         slog.New(&e2eHandler{feed: r.logs, hook: c.LogHook}),
		Sink:           r.set,
	}
	if c.Tweak != nil {
		c.Tweak(&opts)
	}
	sup, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.sup = sup
	sup.Subscribe(r.trans.add)
	go r.sample()
	t.Cleanup(r.finish)
	return r
}

// sample counts, every e2eSampleEvery, the tracked process groups that are
// alive. A group once seen dead stays dead (its members cannot fork), so
// it is not looked at again.
func (r *e2e) sample() {
	defer close(r.stopped)
	tk := time.NewTicker(e2eSampleEvery)
	defer tk.Stop()
	dead := map[int]bool{}
	for {
		select {
		case <-r.stop:
			return
		case <-tk.C:
		}
		var live []string
		for _, p := range r.op.procs.list() {
			if dead[p.Pid] {
				continue
			}
			if fixture.Alive(p.Pid) || fixture.GroupAlive(p.Pid) {
				live = append(live, "gen "+strconv.FormatUint(p.Gen, 10)+" pid "+strconv.Itoa(p.Pid))
			} else {
				dead[p.Pid] = true
			}
		}
		r.samples++
		if len(live) > r.maxLive {
			r.maxLive = len(live)
			if len(live) > 1 && r.overlap == "" {
				r.overlap = strings.Join(live, ", ")
			}
		}
		if n := int(r.wantTools.Load()); n > 0 && r.toolsBroken == "" {
			if _, defs, ok := r.set.Server("fx"); !ok || len(defs) != n {
				r.toolsBroken = "registered " + strconv.Itoa(len(defs)) + " tools, want " + strconv.Itoa(n) +
					" (state " + r.sup.State().State.String() + ")"
			}
		}
	}
}

// finish disposes the supervisor, stops the sampler and proves that no
// process the test started survived.
func (r *e2e) finish() {
	t := r.t
	if r.started.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
		if err := r.sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose (cleanup): %v", err)
		}
		cancel()
	}
	close(r.stop)
	<-r.stopped
	t.Logf("sampler: %d samples, at most %d live server process(es)", r.samples, r.maxLive)
	if r.maxLive > 1 {
		t.Errorf("two live server processes of one supervisor at once: %s (I1)", r.overlap)
	}
	if r.toolsBroken != "" {
		t.Errorf("tools not registered throughout: %s", r.toolsBroken)
	}
	r.assertNoSurvivors()
}

// assertNoSurvivors polls, boundedly, until every tracked pid and process
// group is gone; survivors are reported and SIGKILLed.
func (r *e2e) assertNoSurvivors() {
	t := r.t
	var pids []int
	for _, p := range r.op.procs.list() {
		pids = append(pids, p.Pid)
	}
	r.mu.Lock()
	pids = append(pids, r.extra...)
	r.mu.Unlock()
	alive := func() (left []int) {
		for _, pid := range pids {
			if fixture.Alive(pid) || fixture.GroupAlive(pid) {
				left = append(left, pid)
			}
		}
		return left
	}
	deadline := time.NewTimer(e2eReapWait)
	defer deadline.Stop()
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for {
		left := alive()
		if len(left) == 0 {
			return
		}
		select {
		case <-tk.C:
			continue
		case <-deadline.C:
		}
		t.Errorf("processes survived the supervisor: %v", left)
		for _, pid := range left {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		return
	}
}

// start runs Start with a deadline and marks the rig started.
func (r *e2e) start() error {
	r.t.Helper()
	r.started.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	return r.sup.Start(ctx)
}

// mustStart starts and waits for gen 1 to be established.
func (r *e2e) mustStart() {
	r.t.Helper()
	if err := r.start(); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.waitEstablished(1)
}

// startAsync runs Start on its own goroutine.
func (r *e2e) startAsync() <-chan error {
	r.started.Store(true)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
		defer cancel()
		errc <- r.sup.Start(ctx)
	}()
	return errc
}

// waitTrans waits for a transition of gen from → to.
func (r *e2e) waitTrans(gen uint64, from, to fsm.State) Transition {
	r.t.Helper()
	return r.trans.wait(r.t, "transition "+from.String()+" → "+to.String()+" of gen "+strconv.FormatUint(gen, 10),
		func(tr Transition) bool { return tr.Gen == gen && tr.From == from && tr.To == to })
}

func (r *e2e) waitEstablished(gen uint64) Transition {
	r.t.Helper()
	return r.waitTrans(gen, fsm.Connecting, fsm.Established)
}

// waitState waits until the published snapshot is in state want (observers
// hear of a transition before the snapshot is published) and returns it.
func (r *e2e) waitState(want fsm.State) Snapshot {
	r.t.Helper()
	deadline := time.NewTimer(e2eWait)
	defer deadline.Stop()
	for {
		changed := r.sup.Changed()
		if s := r.sup.State(); s.State == want {
			return s
		}
		select {
		case <-changed:
		case <-deadline.C:
			r.t.Fatalf("state %s not reached within %v (now %+v)", want, e2eWait, r.sup.State())
		}
	}
}

// waitTo waits for the first transition into state to.
func (r *e2e) waitTo(to fsm.State) Transition {
	r.t.Helper()
	return r.trans.wait(r.t, "transition to "+to.String(), func(tr Transition) bool { return tr.To == to })
}

// waitLog waits for the supervisor's log msg of gen.
func (r *e2e) waitLog(msg string, gen uint64) e2eRecord {
	r.t.Helper()
	g := strconv.FormatUint(gen, 10)
	return r.logs.wait(r.t, "log "+strconv.Quote(msg)+" of gen "+g,
		func(rec e2eRecord) bool { return rec.Msg == msg && rec.Attrs["gen"] == g })
}

// waitStderr waits for a stderr line of gen containing sub.
func (r *e2e) waitStderr(gen uint64, sub string) string {
	r.t.Helper()
	g := strconv.FormatUint(gen, 10)
	rec := r.xlogs.wait(r.t, "stderr line "+strconv.Quote(sub)+" of gen "+g, func(rec e2eRecord) bool {
		return rec.Msg == "stderr" && rec.Attrs["gen"] == g && strings.Contains(rec.Attrs["line"], sub)
	})
	return rec.Attrs["line"]
}

var e2eGrandchildLine = regexp.MustCompile(`grandchild pid=(\d+)`)

// grandchild returns the pid of gen's grandchild (the fixture logs it on
// stderr) and tracks it for the survivor check.
func (r *e2e) grandchild(gen uint64) int {
	r.t.Helper()
	line := r.waitStderr(gen, "grandchild pid=")
	m := e2eGrandchildLine.FindStringSubmatch(line)
	if m == nil {
		r.t.Fatalf("cannot parse %q", line)
	}
	pid, _ := strconv.Atoi(m[1])
	r.mu.Lock()
	r.extra = append(r.extra, pid)
	r.mu.Unlock()
	return pid
}

// proc returns the process of gen; it must have been opened.
func (r *e2e) proc(gen uint64) e2eProc {
	r.t.Helper()
	return r.op.procs.wait(r.t, "process of gen "+strconv.FormatUint(gen, 10),
		func(p e2eProc) bool { return p.Gen == gen })
}

// registered is how many tools of "fx" the set holds.
func (r *e2e) registered() int {
	_, defs, _ := r.set.Server("fx")
	return len(defs)
}

// call calls tool with a deadline and returns its text.
func (r *e2e) call(tool string, args any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	res, err := r.sup.Call(ctx, tool, args, nil)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("empty result")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || res.IsError {
		return "", errors.New("not a text result")
	}
	return tc.Text, nil
}

// echo calls echo and fails the test unless it answers.
func (r *e2e) echo(text string) {
	r.t.Helper()
	got, err := r.call("echo", map[string]any{"text": text})
	if err != nil || got != text {
		r.t.Fatalf("echo %q = %q, %v", text, got, err)
	}
}

// dispose runs Dispose with a deadline and returns its error and duration.
func (r *e2e) dispose() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	start := time.Now()
	err := r.sup.Dispose(ctx)
	return time.Since(start), err
}
