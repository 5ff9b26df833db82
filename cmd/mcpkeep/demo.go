package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/spf13/cobra"
)

// newDemoCmd is `mcpkeep demo`: the first thing a new user runs. No setup, no
// network: the built-in fixture server (this binary, re-executed as
// `mcpkeep fixture`) runs supervised, crashes every few seconds, once falls
// into a crash loop that exhausts its retry budget, and is then brought
// back by a manual reconnect. A status line per transition, an echo call
// now and then, and a summary at the end show what the supervisor did.
func newDemoCmd() *cobra.Command {
	duration := durationFlag{d: 20 * time.Second}
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "watch a built-in server crash and recover (no setup, no network)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if duration.d < 2*time.Second {
				fmt.Fprintf(stderr, "mcpkeep demo: --duration must be at least 2s, got %v\n", duration.d)
				return exitError{2}
			}
			exe, err := os.Executable()
			if err != nil {
				fmt.Fprintf(stderr, "mcpkeep demo: cannot find my own binary to run the fixture: %v\n", err)
				return exitError{1}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			d := &demo{
				duration: duration.d,
				fixture: func(mode string) (string, []string, map[string]string) {
					return exe, []string{"fixture", "--mode", mode}, nil
				},
				out: stdout,
				tty: isTerminal(stdout),
			}
			return exit(d.run(ctx))
		},
	}
	cmd.Flags().Var(&duration, "duration", "how long to run (at least 2s)")
	return cmd
}

// demo is one run of the demo. The fixture command is a field so tests
// run the fixture from the test binary.
type demo struct {
	duration time.Duration
	// uptime is how long a healthy fixture lives before it crashes; zero
	// derives it from duration (at most 3 s, so the whole story fits).
	uptime  time.Duration
	fixture func(mode string) (path string, args []string, env map[string]string)
	out     io.Writer
	tty     bool
	// stopWhen, when set, ends the demo early once it returns true after
	// a transition: tests stop when the story is told, however slow the
	// machine, instead of guessing a duration.
	stopWhen func(*demoStatus) bool

	reconnected atomic.Bool // the manual reconnect was made: the crash loop ends
}

// The story, by generation: three healthy runs that crash after uptime
// (each recovers: uptime outlasts the stability window, so the budget
// resets), then a crash loop whose connects succeed and die at once until
// the budget is spent (exhausted), then healthy runs again after the
// manual reconnect. The loop lasts until that reconnect rather than for a
// fixed number of generations: on a loaded machine one of its processes
// may take longer than the stability window to exit, which resets the
// budget as it should, and the loop then goes on until three crashes in a
// row spend it.
const (
	healthyUntil = 3 // gens 1..3 crash after uptime
	demoRetries  = 3
)

func (d *demo) modeFor(gen uint64, uptime time.Duration) string {
	if gen > healthyUntil && !d.reconnected.Load() {
		return "exit-after=0"
	}
	return "exit-after=" + uptime.String()
}

// policy scales the retry policy to uptime: 3 s gives 200 ms doubling to
// 1 s, 3 retries. The stability window is set to maxDelay, a third of
// uptime, under the derived floor: the demo compresses minutes into seconds.
func demoPolicy(uptime time.Duration) backoff.Policy {
	ms := func(d time.Duration) time.Duration { return max(d.Round(time.Millisecond), time.Millisecond) }
	return backoff.Policy{Enabled: true, InitialDelay: ms(uptime / 15), MaxDelay: ms(uptime / 3), MaxAttempts: demoRetries,
		Stability: ms(uptime / 3)}
}

func (d *demo) run(ctx context.Context) int {
	uptime := d.uptime
	if uptime == 0 {
		uptime = min(3*time.Second, d.duration/6).Round(10 * time.Millisecond)
	}
	events := make(chan mcpkeep.Transition, 1024)
	opener := &demoOpener{d: d, uptime: uptime, gens: map[uint64]transport.Generation{}}
	sup, err := mcpkeep.New(mcpkeep.Options{
		Name:           "demo",
		Opener:         opener,
		Policy:         demoPolicy(uptime),
		ConnectTimeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Fprintf(d.out, "demo: %v\n", err)
		return 1
	}
	sup.Subscribe(func(t mcpkeep.Transition) {
		select {
		case events <- t:
		default: // the printer fell behind; the summary still counts from State
		}
	})
	s := newDemoStatus(d.out, d.tty, time.Now(), opener.exit)
	every := (uptime / 3).Round(time.Millisecond)
	s.intro(d.duration, uptime, every, sup.Policy())

	if err := sup.Start(ctx); err != nil {
		fmt.Fprintf(d.out, "demo: start: %v\n", err)
		return 1
	}
	end := time.NewTimer(d.duration)
	defer end.Stop()
	calls := time.NewTicker(every)
	defer calls.Stop()
	var reconnect <-chan time.Time
	n := 0
loop:
	for {
		select {
		case t := <-events:
			s.transition(t, sup.State())
			if t.To == fsm.Exhausted {
				reconnect = time.After(every)
			}
			if d.stopWhen != nil && d.stopWhen(s) {
				break loop
			}
		case <-reconnect:
			reconnect = nil
			s.manual()
			d.reconnected.Store(true)
			if err := sup.Reconnect(); err != nil {
				s.note("reconnect: %v", err)
			}
		case <-calls.C:
			n++
			callCtx, cancel := context.WithTimeout(ctx, uptime)
			start := time.Now()
			_, err := sup.Call(callCtx, "echo", map[string]any{"text": fmt.Sprintf("ping %d", n)}, nil)
			cancel()
			s.call(time.Since(start), err)
		case <-end.C:
			break loop
		case <-ctx.Done():
			s.note("interrupted")
			break loop
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	err = sup.Dispose(dctx)
	for len(events) > 0 {
		s.transition(<-events, sup.State())
	}
	s.summary(err)
	if err != nil {
		return 1
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
