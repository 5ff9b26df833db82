//go:build unix

package mcpkeep

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/mcpkeep/mcpkeep/transport"
)

// recordTraces turns TestRecordTraces from a skip into the recorder of
// testdata/traces: every scenario supervises real fixture processes (this
// test binary re-executed, see main_test.go) over transport.Stdio, on the
// real clock, and writes what a trace.Writer observed. Record them all with
//
//	go test -count=1 -run 'TestRecordTraces' -record .
//
// or one with -run 'TestRecordTraces/NAME'. Each header's "note" repeats
// the command. The recorded files are then replayed by TestReplayTraces.
var recordTraces = flag.Bool("record", false, "record testdata/traces/*.jsonl from real fixture processes (TestRecordTraces)")

// recordWait bounds every wait of the recorder (real time).
const recordWait = 20 * time.Second

// recordGrace is each of the Stdio's teardown graces: termination window
// 3 × 100 ms + 500 ms slack = 800 ms.
const recordGrace = 100 * time.Millisecond

// recordPolicy: delays 100, 200, 400 ms, three retries, stability window
// 400 ms, no jitter.
var recordPolicy = backoff.Policy{Enabled: true, InitialDelay: 100 * time.Millisecond, MaxDelay: 400 * time.Millisecond, MaxAttempts: 3, Stability: 400 * time.Millisecond}

type recordScenario struct {
	name, about string
	modes       []string // fixture mode of gen n is modes[n-1], the last repeats
	opts        func(*Options)
	run         func(r *traceRecording)
}

var recordScenarios = []recordScenario{
	{name: "crash-recovered", about: "the crash tool kills gen 1; gen 2 recovers and stays up past the stability window",
		modes: []string{"normal"},
		run: func(r *traceRecording) {
			r.start()
			r.call("crash")
			r.await("gen 2 stable", func(t Transition) bool { return t.Gen == 2 && t.Event == fsm.Stable })
		}},
	{name: "crash-loop-exhausted", about: "every gen exits right after its initial tools/list (exit-after=0): 3 retries, then gave up",
		modes: []string{"exit-after=0"},
		run: func(r *traceRecording) {
			r.start()
			r.await("exhausted", func(t Transition) bool { return t.To == fsm.Exhausted })
		}},
	{name: "occasional-crashes", about: "maxAttempts 1, yet four crashes each after the stability window recover every time (stable resets the budget)",
		modes: []string{"normal"},
		opts:  func(o *Options) { o.Policy.MaxAttempts = 1 },
		run: func(r *traceRecording) {
			r.start()
			for gen := uint64(1); gen <= 4; gen++ {
				r.await("stable", func(t Transition) bool { return t.Gen == gen && t.Event == fsm.Stable })
				r.call("crash")
			}
			r.await("gen 5 stable", func(t Transition) bool { return t.Gen == 5 && t.Event == fsm.Stable })
		}},
	{name: "dispose-during-backoff", about: "the crash tool kills gen 1; the supervisor is disposed while it waits 2 s to retry",
		modes: []string{"normal"},
		opts: func(o *Options) {
			o.Policy.InitialDelay, o.Policy.MaxDelay, o.Policy.Stability = 2*time.Second, 4*time.Second, 4*time.Second
		},
		run: func(r *traceRecording) {
			r.start()
			r.call("crash")
			r.await("backing-off", func(t Transition) bool { return t.To == fsm.BackingOff })
		}},
	{name: "hung-handshake", about: "gen 1 never answers initialize (hang-init): connect timeout after 300 ms, its process is killed, gen 2 connects",
		modes: []string{"hang-init", "normal"},
		opts:  func(o *Options) { o.ConnectTimeout = 300 * time.Millisecond },
		run: func(r *traceRecording) {
			r.start()
			r.await("gen 2 established", func(t Transition) bool { return t.Gen == 2 && t.To == fsm.Established })
		}},
	{name: "list-changed-storm", about: "20 bursts of 5 concurrent grow calls, 15 ms apart (the SDK debounces list_changed by 10 ms): a storm of tools/list_changed while syncs run",
		modes: []string{"normal"},
		run: func(r *traceRecording) {
			r.start()
			for range 20 {
				var wg sync.WaitGroup
				for range 5 {
					wg.Add(1)
					go func() { defer wg.Done(); r.call("grow") }()
				}
				wg.Wait()
				time.Sleep(15 * time.Millisecond) // a recorder on the real clock, not a test
			}
			r.quiet(300 * time.Millisecond)
		}},
	{name: "reconnect-from-exhausted", about: "maxAttempts 1 and two gens that exit after their tools/list: gave up; a manual Reconnect starts gen 3, which stays up",
		modes: []string{"exit-after=0", "exit-after=0", "normal"},
		opts:  func(o *Options) { o.Policy.MaxAttempts = 1 },
		run: func(r *traceRecording) {
			r.start()
			r.await("exhausted", func(t Transition) bool { return t.To == fsm.Exhausted })
			if err := r.sup.Reconnect(); err != nil {
				r.t.Fatalf("Reconnect: %v", err)
			}
			r.await("gen 3 established", func(t Transition) bool { return t.Gen == 3 && t.To == fsm.Established })
		}},
	{name: "reconnect-disabled", about: "reconnect disabled: the crash leaves the server exhausted (guard \"reconnect disabled\") until a manual Reconnect",
		modes: []string{"normal"},
		opts:  func(o *Options) { o.Policy.Enabled = false },
		run: func(r *traceRecording) {
			r.start()
			r.call("crash")
			r.await("exhausted", func(t Transition) bool { return t.To == fsm.Exhausted })
			if err := r.sup.Reconnect(); err != nil {
				r.t.Fatalf("Reconnect: %v", err)
			}
			r.await("gen 2 established", func(t Transition) bool { return t.Gen == 2 && t.To == fsm.Established })
		}},
}

func TestRecordTraces(t *testing.T) {
	if !*recordTraces {
		t.Skip("records testdata/traces from real processes; run with -record")
	}
	for _, sc := range recordScenarios {
		t.Run(sc.name, func(t *testing.T) { recordScenarioRun(t, sc) })
	}
}

// traceRecording is one recording: a supervisor over real fixture processes.
type traceRecording struct {
	t   *testing.T
	sup *Supervisor

	mu    sync.Mutex
	seen  []Transition
	ticks chan struct{}
}

func (r *traceRecording) observe(tr Transition) {
	r.mu.Lock()
	r.seen = append(r.seen, tr)
	r.mu.Unlock()
	select {
	case r.ticks <- struct{}{}:
	default:
	}
}

func (r *traceRecording) start() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), recordWait)
	defer cancel()
	if err := r.sup.Start(ctx); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
}

// call calls a tool, waiting for the server to be ready.
func (r *traceRecording) call(tool string) {
	ctx, cancel := context.WithTimeout(context.Background(), recordWait)
	defer cancel()
	if _, err := r.sup.Call(ctx, tool, map[string]any{}, &CallOptions{WaitForReady: true}); err != nil {
		r.t.Errorf("call %s: %v", tool, err)
	}
}

// await waits for a transition matching pred (seen at any time).
func (r *traceRecording) await(what string, pred func(Transition) bool) {
	r.t.Helper()
	deadline := time.After(recordWait)
	for {
		r.mu.Lock()
		for _, tr := range r.seen {
			if pred(tr) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.ticks:
		case <-deadline:
			r.t.Fatalf("no %s within %s", what, recordWait)
		}
	}
}

// quiet waits until no transition was observed for d.
func (r *traceRecording) quiet(d time.Duration) {
	for {
		select {
		case <-r.ticks:
		case <-time.After(d):
			return
		}
	}
}

// recordOpener runs the fixture in the generation's mode over a fresh
// transport.Stdio per generation.
type recordOpener struct{ modes []string }

func (o recordOpener) stdio(gen uint64) *transport.Stdio {
	mode := o.modes[min(int(gen), len(o.modes))-1]
	path, args, env := fixture.CommandEnv(mode)
	return &transport.Stdio{Command: path, Args: args, Env: env, Server: "fixture",
		StdinGrace: recordGrace, TermGrace: recordGrace, KillGrace: recordGrace}
}

func (o recordOpener) TerminationWindow() time.Duration { return o.stdio(1).TerminationWindow() }

func (o recordOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	return o.stdio(gen).Open(ctx, gen)
}

func recordScenarioRun(t *testing.T, sc recordScenario) {
	opts := Options{Name: "fixture", Opener: recordOpener{sc.modes}, Policy: recordPolicy, ConnectTimeout: 5 * time.Second}
	if sc.opts != nil {
		sc.opts(&opts)
	}
	sup, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "traces", sc.name+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := TraceHeader(time.Now(), sup)
	h.Note = sc.about + ". Recorded by: go test -count=1 -run 'TestRecordTraces/" + sc.name + "' -record ."
	w := trace.NewWriter(f, h)
	sup.Subscribe(TraceObserver(w))
	r := &traceRecording{t: t, sup: sup, ticks: make(chan struct{}, 1)}
	sup.Subscribe(r.observe)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), recordWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("trace: %v", err)
		}
		if !t.Failed() {
			g, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s, err := trace.Summarize(g)
			if err != nil {
				t.Errorf("%s does not check: %v", path, err)
			}
			t.Logf("%s: %s", path, s)
		}
	}()
	sc.run(r)
}
