package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// The pool's rows of the race table (DESIGN §7: R22, R24, R28). Like the
// supervisor's rows they run inside a synctest bubble with a mock clock;
// the pool runs scripted in-memory servers (poolRig), and every
// generation any supervisor of a server name ever opened is watched, so
// I1 is checked across supervisors: at most one generation of a name is
// live at any moment, whichever supervisor opened it.

const (
	rigConnectTimeout = 5 * time.Second
	rigTermWindow     = 3 * time.Second
)

// rigPolicy: retries after 1 s, 2 s, 4 s, 4 s on the mock clock.
var rigPolicy = backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 4}

// rigServer is server name's configuration; configurations of one name
// with different variants are not Equal (a change for Apply).
func rigServer(name string, variant int) config.Server {
	return config.Server{Name: name, Transport: config.TransportStdio, Command: "mem",
		Args: []string{fmt.Sprintf("v%d", variant)}, Reconnect: rigPolicy, ConnectTimeout: rigConnectTimeout}
}

// rigFault scripts generation gen of the inc-th supervisor (0-based, in
// the order the pool built them) of server name.
type rigFault func(name string, inc int, gen uint64) transport.Fault

// poolRig is a Pool over scripted in-memory servers, on a mock clock,
// inside a synctest bubble. Each supervisor the pool builds gets its own
// transport.Memory; the rig sees every generation any of them opens.
type poolRig struct {
	t   testingT
	clk *clock.Mock
	set *tools.Set
	p   *Pool

	mu    sync.Mutex
	fault rigFault
	mems  map[string][]*transport.Memory
	// gens is every generation ever opened of each server name, by every
	// supervisor of that name.
	gens       map[string][]*transport.MemGen
	incOf      map[*transport.MemGen]int // the supervisor that opened it
	maxLive    map[string]int
	violations []string
	gates      []*rigGate
}

// rigGate holds connects (transport.Fault.Gate) until opened; a failed
// row's cleanup opens every gate of the rig.
type rigGate struct {
	ch   chan struct{}
	once sync.Once
}

func (g *rigGate) open() { g.once.Do(func() { close(g.ch) }) }

func (r *poolRig) newGate() *rigGate {
	g := &rigGate{ch: make(chan struct{})}
	r.mu.Lock()
	r.gates = append(r.gates, g)
	r.mu.Unlock()
	return g
}

func (r *poolRig) setFault(f rigFault) {
	r.mu.Lock()
	r.fault = f
	r.mu.Unlock()
}

func (r *poolRig) openGates() {
	r.mu.Lock()
	gates := append([]*rigGate(nil), r.gates...)
	r.mu.Unlock()
	for _, g := range gates {
		g.open()
	}
}

func newPoolRig(t testingT, fault rigFault) *poolRig {
	t.Helper()
	r := &poolRig{t: t, clk: clock.NewMock(), set: tools.NewSet(tools.Limits{}), fault: fault,
		mems: map[string][]*transport.Memory{}, gens: map[string][]*transport.MemGen{},
		incOf: map[*transport.MemGen]int{}, maxLive: map[string]int{}}
	r.p = NewPool(PoolOptions{Sink: r.set, Clock: r.clk, Opener: r.open,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// A failed row must still quiesce, or synctest reports a deadlock
	// instead of the failure.
	t.Cleanup(func() {
		if t.Failed() {
			r.forceDispose()
		}
	})
	return r
}

// open is the pool's Opener: a fresh Memory per supervisor.
func (r *poolRig) open(sc config.Server) (transport.Opener, error) {
	return r.opener(sc.Name), nil
}

// opener makes the transport of the next supervisor of name (also for a
// supervisor the test builds itself).
func (r *poolRig) opener(name string) transport.Opener {
	r.mu.Lock()
	defer r.mu.Unlock()
	inc := len(r.mems[name])
	m := transport.NewMemory("echo")
	m.Clock = r.clk
	m.Fault = func(gen uint64) transport.Fault {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fault == nil {
			return transport.Fault{}
		}
		return r.fault(name, inc, gen)
	}
	r.mems[name] = append(r.mems[name], m)
	return rigOpener{r: r, name: name, inc: inc, mem: m}
}

// rigOpener records every generation its Memory opens.
type rigOpener struct {
	r    *poolRig
	name string
	inc  int
	mem  *transport.Memory
}

func (o rigOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	g, err := o.mem.Open(ctx, gen)
	if err == nil {
		o.r.opened(o.name, o.inc, g.(*transport.MemGen))
	}
	return g, err
}

func (o rigOpener) TerminationWindow() time.Duration { return rigTermWindow }

// opened checks I1 across supervisors at the one moment the number of
// live generations of a name can grow.
func (r *poolRig) opened(name string, inc int, g *transport.MemGen) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gens[name] = append(r.gens[name], g)
	r.incOf[g] = inc
	var live []string
	for _, x := range r.gens[name] {
		if !memGone(x) {
			live = append(live, fmt.Sprintf("gen %d of supervisor #%d", x.Number(), r.incOf[x]))
		}
	}
	r.maxLive[name] = max(r.maxLive[name], len(live))
	if len(live) > 1 {
		r.violations = append(r.violations, fmt.Sprintf(
			"I1: server %q: supervisor #%d opened gen %d while %d generations of the name were live (%s)",
			name, inc, g.Number(), len(live), strings.Join(live, ", ")))
	}
}

func memGone(g *transport.MemGen) bool {
	select {
	case <-g.Gone():
		return true
	default:
		return false
	}
}

// live counts the live generations of name, across its supervisors.
func (r *poolRig) live(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, g := range r.gens[name] {
		if !memGone(g) {
			n++
		}
	}
	return n
}

func (r *poolRig) liveAll() int {
	r.mu.Lock()
	names := make([]string, 0, len(r.gens))
	for n := range r.gens {
		names = append(names, n)
	}
	r.mu.Unlock()
	total := 0
	for _, n := range names {
		total += r.live(n)
	}
	return total
}

// mem is the Memory of the inc-th supervisor of name, nil if none.
func (r *poolRig) mem(name string, inc int) *transport.Memory {
	r.mu.Lock()
	defer r.mu.Unlock()
	if inc >= len(r.mems[name]) {
		return nil
	}
	return r.mems[name][inc]
}

// gen is generation n of the inc-th supervisor of name, nil if not opened.
func (r *poolRig) gen(name string, inc int, n uint64) *transport.MemGen {
	if m := r.mem(name, inc); m != nil {
		return m.Gen(n)
	}
	return nil
}

// opens counts the generations the inc-th supervisor of name opened.
func (r *poolRig) opens(name string, inc int) int {
	m := r.mem(name, inc)
	if m == nil {
		return 0
	}
	n := 0
	for g := uint64(1); m.Gen(g) != nil; g++ {
		n++
	}
	return n
}

// releaseGone delivers every withheld close signal of name.
func (r *poolRig) releaseGone(name string) {
	r.mu.Lock()
	gens := append([]*transport.MemGen(nil), r.gens[name]...)
	r.mu.Unlock()
	for _, g := range gens {
		g.ReleaseGone()
	}
}

func (r *poolRig) releaseAll() {
	r.mu.Lock()
	var gens []*transport.MemGen
	for _, l := range r.gens {
		gens = append(gens, l...)
	}
	r.mu.Unlock()
	for _, g := range gens {
		g.ReleaseGone()
	}
}

func (r *poolRig) check() {
	r.t.Helper()
	r.mu.Lock()
	v := append([]string(nil), r.violations...)
	r.mu.Unlock()
	if len(v) > 0 {
		r.t.Fatalf("%s", strings.Join(v, "\n"))
	}
}

// settle waits until every goroutine of the bubble is blocked and checks
// I1 across supervisors.
func (r *poolRig) settle() {
	r.t.Helper()
	synctest.Wait()
	r.check()
}

func (r *poolRig) advance(d time.Duration) {
	r.t.Helper()
	r.clk.Add(d)
	r.settle()
}

func (r *poolRig) applyAsync(servers ...config.Server) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- r.p.Apply(context.Background(), &config.Config{Servers: servers}) }()
	return errc
}

// apply runs an Apply that needs no mock time (its servers connect at
// once) and returns its error.
func (r *poolRig) apply(servers ...config.Server) error {
	r.t.Helper()
	errc := r.applyAsync(servers...)
	r.settle()
	return r.returned(errc, "Apply")
}

func (r *poolRig) returned(errc <-chan error, what string) error {
	r.t.Helper()
	select {
	case err := <-errc:
		return err
	default:
		r.t.Fatalf("%s has not returned", what)
		return nil
	}
}

func (r *poolRig) pending(errc <-chan error, what string) {
	r.t.Helper()
	select {
	case err := <-errc:
		r.t.Fatalf("%s returned (%v), want it still waiting", what, err)
	default:
	}
}

func (r *poolRig) sup(name string) *Supervisor {
	r.t.Helper()
	s, ok := r.p.Supervisor(name)
	if !ok {
		r.t.Fatalf("the pool has no supervisor %q", name)
	}
	return s
}

func (r *poolRig) wantEstablished(name string) *Supervisor {
	r.t.Helper()
	s := r.sup(name)
	if st := s.State(); st.State != fsm.Established {
		r.t.Fatalf("%s: %s, want established (%+v)", name, st.State, st)
	}
	if _, defs, _ := r.set.Server(name); len(defs) != 1 || defs[0].PublicName != name+"__echo" {
		r.t.Fatalf("%s established with tools %v, want [%s__echo]", name, defs, name)
	}
	return s
}

// echo calls name's echo tool through the pool and wants its answer.
func (r *poolRig) echo(name string) {
	r.t.Helper()
	res, err := r.p.Call(context.Background(), name+"__echo", map[string]any{"text": "hi " + name}, nil)
	if err != nil || resultText(res) != "hi "+name {
		r.t.Fatalf("Call %s__echo: %q, %v", name, resultText(res), err)
	}
}

// wantQuarantined: Reserve of name fails with tools.ErrQuarantined.
func (r *poolRig) wantQuarantined(name string) {
	r.t.Helper()
	err := r.set.Reserve(name)
	if err == nil {
		r.set.Release(name)
	}
	if !errors.Is(err, tools.ErrQuarantined) {
		r.t.Fatalf("Reserve(%q) = %v, want tools.ErrQuarantined", name, err)
	}
}

func (r *poolRig) wantReservable(name string) {
	r.t.Helper()
	if err := r.set.Reserve(name); err != nil {
		r.t.Fatalf("Reserve(%q) = %v, want the name free", name, err)
	}
	r.set.Release(name)
}

// disposeAndCheck disposes the pool, driving the mock clock through the
// drains, delivers every withheld close signal, and checks that nothing
// is live and every name the rig saw is free.
func (r *poolRig) disposeAndCheck() error {
	r.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- r.p.Dispose(context.Background()) }()
	var err error
	done := false
	for range 100 {
		synctest.Wait()
		select {
		case err = <-errc:
			done = true
		default:
		}
		if done {
			break
		}
		r.clk.Add(time.Second)
	}
	if !done {
		r.t.Fatalf("Pool.Dispose did not return within 100 s of mock time")
	}
	r.releaseAll()
	r.settle()
	if n := r.liveAll(); n != 0 {
		r.t.Fatalf("after Dispose and every close signal: %d generations live", n)
	}
	r.mu.Lock()
	names := make([]string, 0, len(r.mems))
	for n := range r.mems {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		r.wantReservable(n)
	}
	return err
}

// forceDispose ends a failed row: every close signal is released and
// the pool disposed with a bounded amount of mock time.
func (r *poolRig) forceDispose() {
	errc := make(chan error, 1)
	go func() { errc <- r.p.Dispose(context.Background()) }()
	for range 200 {
		r.releaseAll()
		r.openGates()
		synctest.Wait()
		select {
		case <-errc:
			return
		default:
		}
		r.clk.Add(time.Second)
	}
}

// holdFirstA withholds the close signal of the first supervisor of "a".
func holdFirstA(name string, inc int, _ uint64) transport.Fault {
	if name == "a" && inc == 0 {
		return transport.Fault{HoldGone: true}
	}
	return transport.Fault{}
}

// quarantineA runs "a" (its first supervisor's close signal withheld),
// then applies next, which disposes that supervisor, and drives the mock
// clock past the termination window: the dispose ends incomplete and the
// name is quarantined. It returns the old supervisor and the Apply still
// in flight (or returned, when next does not run "a").
func quarantineA(t *testing.T, r *poolRig, next ...config.Server) (*Supervisor, <-chan error) {
	t.Helper()
	if err := r.apply(rigServer("a", 0)); err != nil {
		t.Fatalf("Apply a: %v", err)
	}
	old := r.wantEstablished("a")
	errc := r.applyAsync(next...)
	r.settle()
	r.pending(errc, "Apply while the old generation's close signal is withheld")
	if st := old.State().State; st != fsm.Draining {
		t.Fatalf("old a: %s, want draining", st)
	}
	if r.live("a") != 1 || r.opens("a", 1) != 0 {
		t.Fatalf("while old a drains: %d live, the replacement opened %d", r.live("a"), r.opens("a", 1))
	}
	r.advance(rigTermWindow) // drain_timeout: incomplete shutdown
	if err := old.Dispose(context.Background()); !errors.Is(err, ErrIncompleteShutdown) {
		t.Fatalf("old a: Dispose = %v, want ErrIncompleteShutdown", err)
	}
	select {
	case <-old.Released():
		t.Fatalf("old a released its name without its close signal")
	default:
	}
	r.wantQuarantined("a")
	if r.live("a") != 1 {
		t.Fatalf("old a's generation is not live any more")
	}
	return old, errc
}

func TestR22ReplacementWaitsForPredecessorBarrier(t *testing.T) {
	t.Run("changed server waits, then starts by itself", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			old, errc := quarantineA(t, r, rigServer("a", 1))
			// The bounded wait: the replacement's connect timeout from the
			// moment the predecessor's dispose returned.
			r.advance(rigConnectTimeout - time.Millisecond)
			r.pending(errc, "Apply before its bounded wait ended")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.advance(time.Millisecond)
			err := r.returned(errc, "Apply after its bounded wait")
			if !errors.Is(err, ErrWaiting) || !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply = %v, want ErrWaiting and ErrIncompleteShutdown", err)
			}
			repl := r.sup("a")
			if repl == old || repl.State().Started {
				t.Fatalf("pool's a: same as old %v, started %v", repl == old, repl.State().Started)
			}
			if cfg, _ := r.p.Server("a"); !cfg.Equal(rigServer("a", 1)) {
				t.Fatalf("pool's a config %+v", cfg)
			}
			// Routable all along: an outage that says why, not an unknown tool.
			_, err = r.p.Call(context.Background(), "a__echo", nil, nil)
			var nc *NotConnectedError
			if !errors.As(err, &nc) || nc.Server != "a" || !errors.Is(nc.LastErr, ErrWaiting) || errors.Is(err, ErrUnknownTool) {
				t.Fatalf("Call while waiting: %v, want a NotConnectedError caused by ErrWaiting", err)
			}
			r.wantQuarantined("a")
			r.advance(time.Minute) // nothing but the close signal starts it
			if n := r.opens("a", 1); n != 0 || repl.State().Started {
				t.Fatalf("the replacement started (%d generations) before the release", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			select {
			case <-old.Released():
			default:
				t.Fatalf("old a: close signal delivered, name not released")
			}
			if got := r.wantEstablished("a"); got != repl {
				t.Fatalf("another supervisor took a")
			}
			if gen, _, _ := r.set.Server("a"); gen != 1 {
				t.Fatalf("a's tools registered by gen %d, want the replacement's gen 1", gen)
			}
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("removed and re-added while quarantined", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			old, errc := quarantineA(t, r) // Apply without a
			if err := r.returned(errc, "Apply removing a"); !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply removing a = %v, want ErrIncompleteShutdown", err)
			}
			if _, ok := r.p.Supervisor("a"); ok {
				t.Fatalf("removed a still in the pool")
			}
			errc = r.applyAsync(rigServer("a", 0))
			r.settle()
			r.pending(errc, "Apply re-adding a")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("re-added a opened %d generations while the old one is live", n)
			}
			r.advance(rigConnectTimeout)
			err := r.returned(errc, "Apply re-adding a, after its bounded wait")
			if !errors.Is(err, ErrWaiting) || errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply re-adding a = %v, want ErrWaiting only", err)
			}
			r.wantQuarantined("a")
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			<-old.Released()
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("a host's second supervisor of the name on the same Set", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			_, errc := quarantineA(t, r)
			if err := r.returned(errc, "Apply removing a"); !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply removing a = %v, want ErrIncompleteShutdown", err)
			}
			host, err := New(Options{Name: "a", Opener: r.opener("a"), Policy: rigPolicy,
				ConnectTimeout: rigConnectTimeout, Clock: r.clk, Sink: r.set})
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(context.Background()); !errors.Is(err, tools.ErrQuarantined) {
				t.Fatalf("host Start while a is quarantined = %v, want tools.ErrQuarantined", err)
			}
			r.settle()
			if n := r.opens("a", 1); n != 0 || host.State().Started {
				t.Fatalf("refused host supervisor opened %d generations, started %v", n, host.State().Started)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := host.Start(context.Background()); err != nil {
				t.Fatalf("host Start after the release = %v", err)
			}
			r.settle()
			if st := host.State().State; st != fsm.Established {
				t.Fatalf("host a: %s", st)
			}
			res, err := host.Call(context.Background(), "echo", map[string]any{"text": "host"}, nil)
			if err != nil || resultText(res) != "host" {
				t.Fatalf("host Call: %q %v", resultText(res), err)
			}
			if err := host.Dispose(context.Background()); err != nil {
				t.Fatalf("host Dispose: %v", err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("release within the bounded wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			_, errc := quarantineA(t, r, rigServer("a", 1))
			r.advance(rigConnectTimeout / 2)
			r.pending(errc, "Apply waiting for the predecessor")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			err := r.returned(errc, "Apply after the release")
			// The predecessor's dispose did not complete in its window,
			// which Apply reports (its doc: "every dispose that did not
			// complete"); the replacement is not reported as waiting.
			if errors.Is(err, ErrWaiting) || !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Apply = %v, want ErrIncompleteShutdown of the predecessor only", err)
			}
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("release within the drain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0)); err != nil {
				t.Fatal(err)
			}
			errc := r.applyAsync(rigServer("a", 1))
			r.settle()
			r.advance(rigTermWindow - time.Millisecond)
			r.pending(errc, "Apply while the old generation drains")
			if n := r.opens("a", 1); n != 0 {
				t.Fatalf("the replacement opened %d generations while the old one is live", n)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply = %v, want nil", err)
			}
			r.wantEstablished("a")
			r.echo("a")
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
}

func TestR24DisposeHonoursContextDuringApply(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(never <-chan struct{}) transport.Fault
		// stuck: the start cannot wind down without the test (its close
		// signal is withheld), so Dispose must return ctx's error.
		stuck bool
	}{
		{"connect held at a gate", func(never <-chan struct{}) transport.Fault { return transport.Fault{Gate: never} }, false},
		{"hung handshake", func(<-chan struct{}) transport.Fault { return transport.Fault{Hang: true} }, false},
		{"held connect whose close signal is withheld", func(never <-chan struct{}) transport.Fault {
			return transport.Fault{Gate: never, HoldGone: true}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newPoolRig(t, nil)
				never := r.newGate() // opened only by a failed row's cleanup
				r.setFault(func(name string, _ int, _ uint64) transport.Fault {
					if name == "a" {
						return c.fault(never.ch)
					}
					return transport.Fault{}
				})
				if err := r.apply(rigServer("b", 0)); err != nil {
					t.Fatal(err)
				}
				errc := r.applyAsync(rigServer("b", 0), rigServer("a", 0))
				r.settle()
				r.pending(errc, "Apply of a server that hangs in connecting")
				a := r.sup("a")
				if st := a.State().State; st != fsm.Connecting || r.live("a") != 1 {
					t.Fatalf("a: %s with %d live, want connecting with its generation live", st, r.live("a"))
				}

				const deadline = 2 * time.Second
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				dc := make(chan error, 1)
				go func() { dc <- r.p.Dispose(ctx) }()
				var err error
				select {
				case err = <-dc:
				case <-time.After(deadline + time.Second):
					t.Fatalf("Pool.Dispose did not return by its context's deadline")
				}
				if d := time.Since(start); d > deadline {
					t.Fatalf("Pool.Dispose returned after %v, its deadline was %v", d, deadline)
				}
				if c.stuck {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Pool.Dispose = %v, want the deadline", err)
					}
					r.releaseGone("a")
				} else if err != nil {
					t.Fatalf("Pool.Dispose = %v", err)
				}
				r.settle()
				// Apply has returned; what it says depends on which ended
				// the start first: the pool's cancel (ctx's error) or the
				// supervisor's dispose (a non-strict Start then returns nil).
				_ = r.returned(errc, "Apply after Dispose")
				if st := a.State().State; st != fsm.Disposed {
					t.Fatalf("a: %s after Dispose, want disposed", st)
				}
				if n := r.liveAll(); n != 0 || r.mem("a", 0).Live() != 0 {
					t.Fatalf("after Dispose: %d generations live", n)
				}
				r.wantReservable("a")
				r.wantReservable("b")
				if err := r.p.Apply(context.Background(), &config.Config{}); !errors.Is(err, ErrDisposed) {
					t.Fatalf("Apply after Dispose = %v, want ErrDisposed", err)
				}
			})
		})
	}
}

func TestR28EveryAnnouncedToolIsRoutable(t *testing.T) {
	t.Run("a subscriber calls what it is told about", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			type outcome struct {
				tool string
				text string
				err  error
			}
			var mu sync.Mutex
			var syncErrs []string
			told := 0
			waited := make(chan outcome, 64)
			r.set.Subscribe(func(ch tools.Change) {
				if ch.Kind != tools.Replaced {
					return
				}
				for _, tl := range ch.Tools {
					mu.Lock()
					told++
					mu.Unlock()
					// At once, on the goroutine that announced it.
					_, err := r.p.Call(context.Background(), tl.PublicName, map[string]any{"text": "now"}, nil)
					if errors.Is(err, ErrUnknownTool) || (err != nil && !errors.Is(err, ErrNotConnected)) {
						mu.Lock()
						syncErrs = append(syncErrs, fmt.Sprintf("%s (gen %d): %v", tl.PublicName, ch.Gen, err))
						mu.Unlock()
					}
					// And on a goroutine of its own, waiting for ready.
					go func() {
						res, err := r.p.Call(context.Background(), tl.PublicName, map[string]any{"text": "later"},
							&CallOptions{WaitForReady: true, ReadyTimeout: rigConnectTimeout})
						waited <- outcome{tl.PublicName, resultText(res), err}
					}()
				}
			})
			if err := r.apply(rigServer("a", 0), rigServer("b", 0)); err != nil {
				t.Fatal(err)
			}
			// a changed, b unchanged, c added.
			if err := r.apply(rigServer("a", 1), rigServer("b", 0), rigServer("c", 0)); err != nil {
				t.Fatal(err)
			}
			// b recovers with a longer list: a new swap.
			r.mem("b", 0).SetTools("echo", "more")
			r.gen("b", 0, 1).Kill()
			r.settle()
			r.advance(rigPolicy.InitialDelay)
			if _, defs, _ := r.set.Server("b"); len(defs) != 2 {
				t.Fatalf("b after recovery: %v", defs)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(syncErrs) > 0 {
				t.Fatalf("calls made as the tools were announced:\n%s", strings.Join(syncErrs, "\n"))
			}
			if told != 6 { // a, b, a again, c, b's two
				t.Fatalf("told about %d tools, want 6", told)
			}
			for range told {
				select {
				case o := <-waited:
					if o.err != nil || o.text != "later" {
						t.Errorf("waiting call of %s: %q %v", o.tool, o.text, o.err)
					}
				default:
					t.Fatalf("a waiting call of an announced tool has not returned")
				}
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	// restart runs a, then applies changed (a's new configuration) with
	// the new supervisor's first connect held at a gate (gated); it
	// returns the Apply in flight.
	restart := func(t *testing.T, r *poolRig, changed config.Server) <-chan error {
		t.Helper()
		if err := r.apply(rigServer("a", 0)); err != nil {
			t.Fatal(err)
		}
		old := r.wantEstablished("a")
		errc := r.applyAsync(changed)
		r.settle()
		r.pending(errc, "Apply whose new server is held in connecting")
		if st := old.State().State; st != fsm.Disposed || r.mem("a", 0).Live() != 0 {
			t.Fatalf("old a: %s, %d live", st, r.mem("a", 0).Live())
		}
		if r.gen("a", 1, 1) == nil || r.sup("a").State().State != fsm.Connecting {
			t.Fatalf("new a is not connecting")
		}
		if _, defs, _ := r.set.Server("a"); len(defs) != 0 {
			t.Fatalf("tools registered while a restarts: %v", defs)
		}
		return errc
	}
	gated := func(gate <-chan struct{}) rigFault {
		return func(name string, inc int, gen uint64) transport.Fault {
			if name == "a" && inc == 1 && gen == 1 {
				return transport.Fault{Gate: gate}
			}
			return transport.Fault{}
		}
	}
	type result struct {
		text string
		err  error
	}
	callAsync := func(r *poolRig, opts *CallOptions) <-chan result {
		c := make(chan result, 1)
		go func() {
			res, err := r.p.Call(context.Background(), "a__echo", map[string]any{"text": "back"}, opts)
			c <- result{resultText(res), err}
		}()
		return c
	}
	wantOutage := func(t *testing.T, err error) {
		t.Helper()
		var nc *NotConnectedError
		if !errors.Is(err, ErrNotConnected) || errors.Is(err, ErrUnknownTool) || !errors.As(err, &nc) || nc.Server != "a" {
			t.Fatalf("Call during the restart: %v, want a NotConnectedError of a", err)
		}
	}

	t.Run("restart: fail fast, then CallOptions.WaitForReady", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			gate := r.newGate()
			r.setFault(gated(gate.ch))
			errc := restart(t, r, rigServer("a", 1))
			_, err := r.p.Call(context.Background(), "a__echo", nil, nil)
			wantOutage(t, err)
			wc := callAsync(r, &CallOptions{WaitForReady: true})
			r.settle()
			select {
			case res := <-wc:
				t.Fatalf("WaitForReady call returned during the restart: %q %v", res.text, res.err)
			default:
			}
			gate.open()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("WaitForReady call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	t.Run("restart: waitForReadyMs of the new configuration", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, nil)
			gate := r.newGate()
			r.setFault(gated(gate.ch))
			changed := rigServer("a", 1)
			changed.WaitForReady = 2 * time.Second
			errc := restart(t, r, changed)
			// Bounded: past waitForReadyMs the call is an outage.
			wc := callAsync(r, nil)
			r.settle() // its timer is armed
			r.advance(changed.WaitForReady - time.Millisecond)
			select {
			case res := <-wc:
				t.Fatalf("waitForReadyMs call returned early: %q %v", res.text, res.err)
			default:
			}
			r.advance(time.Millisecond)
			select {
			case res := <-wc:
				wantOutage(t, res.err)
			default:
				t.Fatalf("waitForReadyMs call still waiting past waitForReadyMs")
			}
			// Within it: the call is served once the new generation is up.
			wc = callAsync(r, nil)
			r.settle()
			r.advance(changed.WaitForReady / 2)
			gate.open()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("waitForReadyMs call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
	// The drain window: the old supervisor's tools stay registered until
	// its drain ends (here held open by a withheld close signal).
	t.Run("changed: calls while the old generation drains", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0)); err != nil {
				t.Fatal(err)
			}
			old := r.wantEstablished("a")
			errc := r.applyAsync(rigServer("a", 1))
			r.settle()
			if st := old.State().State; st != fsm.Draining || publicNames(r.set) != "a__echo" {
				t.Fatalf("old a: %s, listed %q; want draining with its tool listed", st, publicNames(r.set))
			}
			_, err := r.p.Call(context.Background(), "a__echo", nil, nil)
			wantOutage(t, err)
			wc := callAsync(r, &CallOptions{WaitForReady: true})
			r.settle()
			select {
			case res := <-wc:
				t.Fatalf("WaitForReady call returned while the old a drains: %q %v", res.text, res.err)
			default:
			}
			r.gen("a", 0, 1).ReleaseGone() // the drain completes
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r.wantEstablished("a")
			if res := <-wc; res.err != nil || res.text != "back" {
				t.Fatalf("WaitForReady call: %q %v", res.text, res.err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})

	// A removed server's tools stay listed while it drains; a call of
	// them is an outage of the draining server, not an unknown tool.
	t.Run("removed: calls while it drains", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newPoolRig(t, holdFirstA)
			if err := r.apply(rigServer("a", 0), rigServer("b", 0)); err != nil {
				t.Fatal(err)
			}
			old := r.wantEstablished("a")
			errc := r.applyAsync(rigServer("b", 0))
			r.settle()
			if st := old.State().State; st != fsm.Draining || publicNames(r.set) != "a__echo b__echo" {
				t.Fatalf("old a: %s, listed %q; want draining with its tool listed", st, publicNames(r.set))
			}
			if _, err := r.p.Call(context.Background(), "a__echo", nil, nil); !errors.Is(err, ErrNotConnected) {
				t.Fatalf("Call of the listed a__echo while the removed a drains: %v, want ErrNotConnected", err)
			}
			r.gen("a", 0, 1).ReleaseGone()
			r.settle()
			if err := r.returned(errc, "Apply"); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := publicNames(r.set); got != "b__echo" {
				t.Fatalf("listed after the drain: %q", got)
			}
			if _, err := r.p.Call(context.Background(), "a__echo", nil, nil); !errors.Is(err, ErrUnknownTool) {
				t.Fatalf("Call of the removed a__echo after its drain: %v, want ErrUnknownTool", err)
			}
			if err := r.disposeAndCheck(); err != nil {
				t.Fatalf("Dispose: %v", err)
			}
		})
	})
}
