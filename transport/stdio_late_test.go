//go:build unix

package transport

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

// TestStdioLateGroupEndClosesGone (docs/design.md §8): a group that
// outlived the teardown's graces (a member in uninterruptible sleep) is
// watched at a slow, growing interval, and Gone closes once it empties:
// the late close signal the supervisor waits for. On the mock clock.
func TestStdioLateGroupEndClosesGone(t *testing.T) {
	path, args, m := fixture.CommandEnv("normal")
	var alive atomic.Bool
	alive.Store(true)
	var probes atomic.Int64
	mock := clock.NewMock()
	s := &Stdio{
		Command: path, Args: args, Env: m, Clock: mock,
		StdinGrace: time.Second, TermGrace: time.Second, KillGrace: time.Second,
		hooks: &stdioHooks{
			groupAlive: func(int) bool {
				probes.Add(1)
				return alive.Load()
			},
			signalGroup: func(int, syscall.Signal) error { return nil },
		},
	}
	gen, err := s.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	g := gen.(*stdioGen)
	g.Terminate()
	<-g.exited // the fixture exits when its stdin closes
	// advance moves the mock clock by d in steps, so that timers set in
	// between fire too; the real-time bound only catches a hang.
	advance := func(d, step time.Duration) {
		for ; d > 0; d -= step {
			mock.Add(step)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !isClosed(g.reaped) {
		if time.Now().After(deadline) {
			t.Fatal("the teardown did not give up")
		}
		mock.Add(100 * time.Millisecond)
	}
	probes.Store(0)
	advance(10*time.Minute, time.Second)
	if isClosed(g.Gone()) {
		t.Fatal("Gone closed while the group lives")
	}
	// 1 s doubling to 1 min: 14 probes in 10 min, not 600.
	if n := probes.Load(); n < 10 || n > 20 {
		t.Errorf("%d probes in 10 minutes; want a slow, growing interval (about 14)", n)
	}
	alive.Store(false)
	advance(lateWatchMax, time.Second)
	select {
	case <-g.Gone():
	case <-time.After(5 * time.Second):
		t.Fatal("Gone did not close once the group emptied")
	}
	if st := g.Exit().Status; st != "exit status 0" {
		t.Errorf("status %q, want exit status 0", st)
	}
}
