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

// The pool's rows of the race table (docs/design.md §7: R22, R24, R28). Like the
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
var rigPolicy = backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 4, Stability: 4 * time.Second}

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
	// lazy: pmServers makes variant 1 lazy with an idle stop.
	lazy bool
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

func newPoolRig(t testingT, fault rigFault) *poolRig { return newPoolRigWith(t, fault, nil) }

// newPoolRigWith is newPoolRig with the pool's options tweaked.
func newPoolRigWith(t testingT, fault rigFault, tweak func(*PoolOptions)) *poolRig {
	t.Helper()
	r := &poolRig{t: t, clk: clock.NewMock(), set: tools.NewSet(tools.Limits{}), fault: fault,
		mems: map[string][]*transport.Memory{}, gens: map[string][]*transport.MemGen{},
		incOf: map[*transport.MemGen]int{}, maxLive: map[string]int{}}
	opts := PoolOptions{Sink: r.set, Clock: r.clk, Opener: r.open,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if tweak != nil {
		tweak(&opts)
	}
	r.p = NewPool(opts)
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
