package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callEnv is a direct session and a supervisor over the same kind of
// in-memory server (transport.Memory, tool echo), as in call_bench_test.go.
type callEnv struct {
	cs    *mcp.ClientSession
	g     transport.Generation
	s     *mcpkeep.Supervisor
	close func()
}

func newCallEnv(ctx context.Context) (*callEnv, error) {
	g, err := transport.NewMemory("echo").Open(ctx, 1)
	if err != nil {
		return nil, err
	}
	cs, err := newClient().Connect(ctx, g.Transport(), nil)
	if err != nil {
		g.Terminate()
		return nil, err
	}
	// Like the supervisor (and any host), list the tools first: the SDK
	// then knows the tools' schemas, which changes a call's cost.
	if _, err := listAll(ctx, cs); err != nil {
		cs.Close()
		g.Terminate()
		return nil, err
	}
	s, err := mcpkeep.New(mcpkeep.Options{Name: "bench", Opener: transport.NewMemory("echo")})
	if err == nil {
		err = s.Start(ctx)
	}
	if err != nil {
		cs.Close()
		g.Terminate()
		return nil, err
	}
	e := &callEnv{cs: cs, g: g, s: s}
	e.close = func() {
		cs.Close()
		g.Terminate()
		<-g.Gone()
		dctx, cancel := within(context.Background())
		defer cancel()
		_ = s.Dispose(dctx)
	}
	return e, nil
}

var echoArgs = map[string]any{"text": "x"}

// callerCtx is a caller's context variant: ctx returns the context of one
// call and what to do after it.
type callerCtx struct {
	name string
	ctx  func() (context.Context, context.CancelFunc)
}

// callerCtxs are the variants of section 3: a context that can never be
// cancelled, one cancellable context the caller keeps for every call,
// and a fresh cancellable one per call (as a server handling requests
// has: the proxy's calls carry the host request's context). Each side
// makes the fresh one itself, so the difference stays the supervisor's.
func callerCtxs() (vs []callerCtx, stop func()) {
	kept, cancel := context.WithCancel(context.Background())
	parent, cancelParent := context.WithCancel(context.Background())
	none := func() {}
	return []callerCtx{
			{"background", func() (context.Context, context.CancelFunc) { return context.Background(), none }},
			{"cancellable", func() (context.Context, context.CancelFunc) { return kept, none }},
			{"fresh cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(parent) }},
		}, func() {
			cancel()
			cancelParent()
		}
}

// benchDirect is ClientSession.CallTool.
func (e *callEnv) benchDirect(v callerCtx, errp *error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := v.ctx()
			_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
			cancel()
			if err != nil {
				*errp = err
				return
			}
		}
	}
}

// benchSupervised is Supervisor.Call.
func (e *callEnv) benchSupervised(v callerCtx, errp *error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := v.ctx()
			_, err := e.s.Call(ctx, "echo", echoArgs, nil)
			cancel()
			if err != nil {
				*errp = err
				return
			}
		}
	}
}

// benchFigures sum up the rounds of one benchmark.
type benchFigures struct {
	nsPerOp     float64 // of the median round
	allocsPerOp float64 // over all rounds
	bytesPerOp  float64 // over all rounds
}

// median takes the median round's ns/op, and allocations and bytes over
// all rounds' iterations (testing truncates per round; a fraction shows
// allocations that happen on some calls only).
func median(rs []testing.BenchmarkResult) benchFigures {
	ns := make([]float64, len(rs))
	var n, allocs, bytes float64
	for i, r := range rs {
		ns[i] = float64(r.T.Nanoseconds()) / float64(r.N)
		n, allocs, bytes = n+float64(r.N), allocs+float64(r.MemAllocs), bytes+float64(r.MemBytes)
	}
	slices.Sort(ns)
	return benchFigures{nsPerOp: ns[len(ns)/2], allocsPerOp: allocs / n, bytesPerOp: bytes / n}
}

// pair runs a and b alternately for rounds (ABBA, so neither always goes
// first) and returns their medians.
func pair(rounds int, a, b func(*testing.B), errp *error) (fa, fb benchFigures, err error) {
	var ra, rb []testing.BenchmarkResult
	for i := range rounds {
		var x, y testing.BenchmarkResult
		if i%2 == 0 {
			x, y = testing.Benchmark(a), testing.Benchmark(b)
		} else {
			y, x = testing.Benchmark(b), testing.Benchmark(a)
		}
		if *errp != nil {
			return fa, fb, *errp
		}
		if x.N == 0 || y.N == 0 {
			return fa, fb, errors.New("a benchmark failed")
		}
		ra, rb = append(ra, x), append(rb, y)
	}
	return median(ra), median(rb), nil
}

type callResult struct {
	name               string // caller context variant
	direct, supervised benchFigures
	// times: direct (a) and supervised (b) in interleaved batches; the
	// time ratio is times.ratio (interleaveBatches).
	times batchPairs
}

// allocRounds is how many testing.Benchmark rounds of each side measure a
// call's allocations (which, unlike its time, no load on the machine
// changes).
const allocRounds = 2

// runCalls is section 3: for each caller context variant, supervised Call
// beside direct CallTool: their time/op in interleaved batches
// (interleaveBatches), their allocations in testing.Benchmark rounds.
func runCalls(ctx context.Context, cfg Config) ([]callResult, error) {
	e, err := newCallEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	vs, stop := callerCtxs()
	defer stop()
	var out []callResult
	for _, v := range vs {
		var err error
		d, s, perr := pair(min(cfg.Rounds, allocRounds), e.benchDirect(v, &err), e.benchSupervised(v, &err), &err)
		if perr != nil {
			return nil, fmt.Errorf("%s: %w", v.name, perr)
		}
		il, ierr := interleaveBatches(time.Duration(cfg.Rounds)*cfg.BenchTime, time.Now, e.directN(v), e.supervisedN(v))
		if ierr != nil {
			return nil, fmt.Errorf("%s: %w", v.name, ierr)
		}
		out = append(out, callResult{v.name, d, s, il})
		cfg.progress("  call overhead, %s caller context: done", v.name)
	}
	return out, nil
}

// directN and supervisedN make n calls as benchDirect and benchSupervised
// do, for interleaveBatches.
func (e *callEnv) directN(v callerCtx) func(int) error {
	return func(n int) error {
		for range n {
			ctx, cancel := v.ctx()
			_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func (e *callEnv) supervisedN(v callerCtx) func(int) error {
	return func(n int) error {
		for range n {
			ctx, cancel := v.ctx()
			_, err := e.s.Call(ctx, "echo", echoArgs, nil)
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
}
