package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// retryDelay is the stdio supervisors' constant retry delay (initial =
// max, so every retry waits exactly this long); recovery subtracts it.
const retryDelay = 10 * time.Millisecond

var stdioPolicy = backoff.Policy{Enabled: true, InitialDelay: retryDelay, MaxDelay: retryDelay, MaxAttempts: backoff.MaxMaxAttempts}

// crashSample is one die → lost → next call cycle of a supervisor. All
// times are real time from the moment the die request was sent.
type crashSample struct {
	exit        time.Duration // the fixture's exit report was read (0: not timed)
	exited      time.Duration // the bench's own pidfd watcher saw the exit (0: not timed)
	openStart   time.Duration // the attempt called Opener.Open (0: not timed)
	openEnd     time.Duration // ... and it returned
	lost        time.Duration // established -closed-> lost
	backingOff  time.Duration // lost -released-> backing-off: the close barrier
	connecting  time.Duration // backing-off -retry_due-> connecting
	established time.Duration // connecting -connected-> established
	callOK      time.Duration // the next call (WaitForReady) succeeded
}

// crashCycle makes the server exit (tool die) and follows the supervisor
// through its recovery until a call succeeds again. With a mark, the
// fixture's exit report is timed too.
func crashCycle(ctx context.Context, r *rig, mark *exitMark, ol *openLog) (crashSample, error) {
	var cs crashSample
	r.drain()
	if mark != nil {
		mark.set(time.Time{})
	}
	t0 := time.Now()
	if _, err := r.s.Call(ctx, "die", nil, nil); err == nil {
		return cs, errors.New("die returned no error")
	}
	lost, err := r.await(fsm.Lost)
	if err != nil {
		return cs, err
	}
	if lost.tr.Event != fsm.Closed {
		return cs, fmt.Errorf("lost by %s, want closed", lost.tr.Event)
	}
	if mark != nil {
		// The transport reads the child's last stderr lines before it
		// reports the loss, so the report is in by now.
		at := mark.get()
		if at.IsZero() {
			return cs, errors.New("the fixture's exit report was not seen")
		}
		cs.exit = at.Sub(t0)
	}
	cctx, cancel := within(ctx)
	_, err = r.s.Call(cctx, "echo", map[string]any{"text": "x"}, &mcpkeep.CallOptions{WaitForReady: true})
	ok := time.Now()
	cancel()
	if err != nil {
		return cs, fmt.Errorf("call after recovery: %w", err)
	}
	back, err := r.await(fsm.BackingOff)
	if err != nil {
		return cs, err
	}
	conn, err := r.await(fsm.Connecting)
	if err != nil {
		return cs, err
	}
	est, err := r.await(fsm.Established)
	if err != nil {
		return cs, err
	}
	cs.lost, cs.backingOff, cs.connecting, cs.established, cs.callOK = lost.at.Sub(t0), back.at.Sub(t0), conn.at.Sub(t0), est.at.Sub(t0), ok.Sub(t0)
	if ol != nil {
		start, end, ok := ol.get(est.tr.Gen)
		if !ok {
			return cs, fmt.Errorf("no Open of gen %d", est.tr.Gen)
		}
		cs.openStart, cs.openEnd = start.Sub(t0), end.Sub(t0)
		if at, ok := ol.exitOf(lost.tr.Gen); ok {
			cs.exited = at.Sub(t0)
		}
	}
	return cs, nil
}

// coldConnect is what a host does without mcpkeep to (re)connect the same
// server: spawn it (the same transport.Stdio), handshake, list its tools
// (with all, every kind a supervisor lists: prompts, resources and
// templates too); then, timed apart, its first call. The teardown is not
// timed.
func coldConnect(ctx context.Context, st *transport.Stdio, gen uint64, all bool) (open, connect, firstCall time.Duration, err error) {
	ctx, cancel := within(ctx)
	defer cancel()
	client := newClient()
	t0 := time.Now()
	g, err := st.Open(ctx, gen)
	if err != nil {
		return 0, 0, 0, err
	}
	open = time.Since(t0)
	defer func() {
		g.Terminate()
		select {
		case <-g.Gone():
		case <-time.After(waitLimit):
		}
	}()
	cs, err := client.Connect(ctx, g.Transport(), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer cs.Close()
	if _, err := listAll(ctx, cs); err != nil {
		return 0, 0, 0, err
	}
	if all {
		for _, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return 0, 0, 0, err
			}
		}
		for _, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return 0, 0, 0, err
			}
		}
		for _, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return 0, 0, 0, err
			}
		}
	}
	connect = time.Since(t0)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs}); err != nil {
		return 0, 0, 0, err
	}
	return open, connect, time.Since(t0), nil
}

// stdioDetect is an SDK session over ol's transport whose fixture is told
// to die: die sent → Wait returned; with a mark, also die sent → the
// fixture's exit report and → its exit (the bench's watcher).
func stdioDetect(ctx context.Context, ol *openLog, mark *exitMark, gen uint64) (wait, report, exit time.Duration, err error) {
	ctx, cancel := within(ctx)
	defer cancel()
	g, err := ol.Open(ctx, gen)
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		g.Terminate()
		select {
		case <-g.Gone():
		case <-time.After(waitLimit):
		}
	}()
	cs, err := newClient().Connect(ctx, g.Transport(), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer cs.Close()
	if _, err := listAll(ctx, cs); err != nil {
		return 0, 0, 0, err
	}
	if mark != nil {
		mark.set(time.Time{})
	}
	waited := make(chan time.Time, 1)
	go func() { cs.Wait(); waited <- time.Now() }()
	called := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(called)
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "die"})
	}()
	select {
	case t1 := <-waited:
		wait = t1.Sub(t0)
	case <-ctx.Done():
		return 0, 0, 0, errors.New("transport.Stdio: Wait did not return")
	}
	<-called
	if at, ok := ol.exitOf(gen); ok && mark != nil && !mark.get().IsZero() {
		report, exit = mark.get().Sub(t0), at.Sub(t0)
	}
	return wait, report, exit, nil
}

// openLog is an Opener over a Stdio that times every Open, and watches
// every child's exit on its own (watchExit).
type openLog struct {
	*transport.Stdio
	mu    sync.Mutex
	opens map[uint64][2]time.Time
	exits map[uint64]<-chan time.Time
}

func (o *openLog) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	t0 := time.Now()
	g, err := o.Stdio.Open(ctx, gen)
	t1 := time.Now()
	var exit <-chan time.Time
	if p, ok := g.(interface{ Pid() int }); ok && err == nil {
		exit = watchExit(p.Pid())
	}
	o.mu.Lock()
	if o.opens == nil {
		o.opens, o.exits = map[uint64][2]time.Time{}, map[uint64]<-chan time.Time{}
	}
	o.opens[gen] = [2]time.Time{t0, t1}
	if exit != nil {
		o.exits[gen] = exit
	}
	o.mu.Unlock()
	return g, err
}

// exitOf is when the watcher saw gen's child exit, waiting for it (its
// thread may wake after the supervisor's loss).
func (o *openLog) exitOf(gen uint64) (time.Time, bool) {
	o.mu.Lock()
	exit := o.exits[gen]
	delete(o.exits, gen)
	o.mu.Unlock()
	if exit == nil {
		return time.Time{}, false
	}
	select {
	case at, ok := <-exit:
		return at, ok
	case <-time.After(waitLimit):
		return time.Time{}, false
	}
}

func (o *openLog) get(gen uint64) (start, end time.Time, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.opens[gen]
	return t[0], t[1], ok
}

// sdkResult is one CommandTransport detection: from sending die to
// ClientSession.Wait returning.
type sdkResult struct {
	fromDie time.Duration
	capped  bool
}

// sdkDetect measures the SDK's own mcp.CommandTransport on the fixture in
// mode. Past limit the process group is killed (which ends Wait) and the
// sample is capped at limit.
func sdkDetect(ctx context.Context, mode string, limit time.Duration) (res sdkResult, err error) {
	path, args, env := fixture.Command(mode)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	// Its own group only so the suite can clean up the grandchild; the
	// pipes and the transport's behaviour are the SDK's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cctx, cancel := within(ctx)
	defer cancel()
	cs, err := newClient().Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			reapGroup(cmd.Process.Pid)
		}
		return res, err
	}
	pgid := cmd.Process.Pid
	defer reapGroup(pgid)
	if _, err := listAll(cctx, cs); err != nil {
		cs.Close()
		return res, err
	}
	waited := make(chan time.Time, 1)
	go func() { cs.Wait(); waited <- time.Now() }()
	called := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(called)
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "die"})
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case t1 := <-waited:
		res.fromDie = t1.Sub(t0)
	case <-timer.C:
		res.capped, res.fromDie = true, limit
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-waited:
		case <-time.After(waitLimit):
			return res, errors.New("CommandTransport: Wait did not return after SIGKILL to the group")
		}
	}
	<-called
	cs.Close()
	return res, nil
}

// reapGroup makes sure nothing of process group pgid is left.
func reapGroup(pgid int) {
	deadline := time.Now().Add(waitLimit)
	for fixture.GroupAlive(pgid) && time.Now().Before(deadline) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
}

// stdioResult is what the real-process sections measured.
type stdioResult struct {
	plain, grand   []crashSample
	coldOpen       durations
	cold, coldCall durations
	coldAll        durations // a cold connect listing every kind (as the supervisor does)
	coldAllCall    durations // ... and its first call
	timerOverrun   durations // a bare time.AfterFunc(retryDelay) from idle
	transPlain     durations // SDK over transport.Stdio, no supervisor
	// the same, die sent → exit report, and exit report → exit
	sdkReport, sdkTeardown durations
	kernelGap              durations // the fixture's stdout EOF → its exit notification, no transport
	transGrand             durations
	sdkPlain, sdkGrand     []sdkResult
	sdkGrandCaps           int
	sdkGrandLimit          time.Duration
	grandGrace             time.Duration
}

// runStdio runs sections 1 and 2: n crash cycles of a supervised plain
// fixture, each followed by cold connects of the same server and an SDK
// CommandTransport detection of it; n of the grandchild fixture; a few,
// capped, CommandTransport detections of the grandchild fixture.
func runStdio(ctx context.Context, cfg Config) (*stdioResult, error) {
	res := &stdioResult{sdkGrandLimit: cfg.SDKGrandchildCap, grandGrace: 20 * time.Millisecond}

	// Plain server, with the cold connects interleaved.
	var mark exitMark
	plain := &openLog{Stdio: fixtureStdio("normal", 200*time.Millisecond, &mark)}
	r, err := newRig(ctx, mcpkeep.Options{Name: "plain", Opener: plain, Policy: stdioPolicy})
	if err != nil {
		return nil, fmt.Errorf("plain: %w", err)
	}
	coldStdio := fixtureStdio("normal", 200*time.Millisecond, nil)
	for i := range cfg.Crashes {
		cs, err := crashCycle(ctx, r, &mark, plain)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("plain crash %d: %w", i, err)
		}
		res.plain = append(res.plain, cs)
		// Start the cold connect from an idle process too, as the
		// supervisor's connect starts after the retry delay's idle: on a
		// VM an idle vCPU wakes slowly, and that is not the supervisor's.
		time.Sleep(retryDelay)
		do, d, dc, err := coldConnect(ctx, coldStdio, uint64(2*i+1), false)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("cold connect %d: %w", i, err)
		}
		res.coldOpen, res.cold, res.coldCall = append(res.coldOpen, do), append(res.cold, d), append(res.coldCall, dc)
		// ... and one that lists every kind, as the supervisor does.
		time.Sleep(retryDelay)
		_, d, dc, err = coldConnect(ctx, coldStdio, uint64(2*i+2), true)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("cold connect (all lists) %d: %w", i, err)
		}
		res.coldAll, res.coldAllCall = append(res.coldAll, d), append(res.coldAllCall, dc)
		// The SDK's CommandTransport on the same server, one detection per
		// crash cycle: the two sides of the die → lost comparison then see
		// the same load of this shared machine (run one after the other,
		// minutes apart, their p50s moved apart by more than the
		// difference measured).
		sd, err := sdkDetect(ctx, "normal", waitLimit)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("CommandTransport plain %d: %w", i, err)
		}
		res.sdkPlain = append(res.sdkPlain, sd)
		if (i+1)%50 == 0 {
			cfg.progress("  plain: %d/%d crash cycles", i+1, cfg.Crashes)
		}
	}
	r.close()

	// The grandchild server: after the fixture exits, its grandchild holds
	// stdout (as npx, uvx and sh wrappers do). A short stdin grace makes
	// the supervisor's teardown SIGTERM the group at once instead of after
	// 2 s; detection does not depend on it.
	grand := fixtureStdio("grandchild", res.grandGrace, &mark)
	r, err = newRig(ctx, mcpkeep.Options{Name: "grandchild", Opener: grand, Policy: stdioPolicy})
	if err != nil {
		return nil, fmt.Errorf("grandchild: %w", err)
	}
	for i := range cfg.Crashes {
		cs, err := crashCycle(ctx, r, &mark, nil)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("grandchild crash %d: %w", i, err)
		}
		res.grand = append(res.grand, cs)
		if (i+1)%50 == 0 {
			cfg.progress("  grandchild: %d/%d crash cycles", i+1, cfg.Crashes)
		}
	}
	r.close()

	// The machine's own timer overrun: what a retry timer costs with no
	// supervisor around it.
	for range cfg.Crashes {
		ch := make(chan time.Time, 1)
		t0 := time.Now()
		time.AfterFunc(retryDelay, func() { ch <- time.Now() })
		res.timerOverrun = append(res.timerOverrun, (<-ch).Sub(t0)-retryDelay)
		time.Sleep(time.Millisecond)
	}

	// The SDK alone over transport.Stdio, on both servers; the plain
	// server's exit report and exit timed too, beside the supervised
	// cycles' (why die → lost differs).
	var sdkMark exitMark
	plainLog := &openLog{Stdio: fixtureStdio("normal", 200*time.Millisecond, &sdkMark)}
	grandLog := &openLog{Stdio: grand}
	for i := range cfg.Crashes {
		dp, rep, exit, err := stdioDetect(ctx, plainLog, &sdkMark, uint64(i+1))
		if err != nil {
			return nil, fmt.Errorf("transport.Stdio plain %d: %w", i, err)
		}
		if rep > 0 && exit > 0 {
			res.sdkReport, res.sdkTeardown = append(res.sdkReport, rep), append(res.sdkTeardown, exit-rep)
		}
		dg, _, _, err := stdioDetect(ctx, grandLog, nil, uint64(i+1))
		if err != nil {
			return nil, fmt.Errorf("transport.Stdio grandchild %d: %w", i, err)
		}
		res.transPlain, res.transGrand = append(res.transPlain, dp), append(res.transGrand, dg)
	}
	cfg.progress("  SDK over transport.Stdio: %d + %d detections", cfg.Crashes, cfg.Crashes)

	// The kernel's own gap between the child's stdout EOF and its exit.
	for range min(cfg.Crashes, 50) {
		gap, err := kernelExitGap(ctx, "exit-after=5ms")
		if err != nil {
			break // no pidfds: the row says so
		}
		res.kernelGap = append(res.kernelGap, gap)
	}

	// The SDK's CommandTransport on the grandchild server: Wait returns only when the
	// grandchild lets go of stdout (fixture.GrandchildSleep), so these
	// samples run concurrently and are capped.
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for range cfg.SDKGrandchildSamples {
		wg.Go(func() {
			d, err := sdkDetect(ctx, "grandchild", cfg.SDKGrandchildCap)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			res.sdkGrand = append(res.sdkGrand, d)
			if d.capped {
				res.sdkGrandCaps++
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("CommandTransport grandchild: %w", err)
	}
	cfg.progress("  CommandTransport grandchild: %d samples, %d capped", len(res.sdkGrand), res.sdkGrandCaps)
	return res, nil
}
