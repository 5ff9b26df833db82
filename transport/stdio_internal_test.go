//go:build unix

package transport

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

func TestStderrTailBounds(t *testing.T) {
	var tl stderrTail
	for i := range 25 {
		tl.add(strings.Repeat("x", i))
	}
	if len(tl.lines) != stderrTailLines || tl.lines[0] != strings.Repeat("x", 5) {
		t.Errorf("kept %d lines starting %q; want the last %d", len(tl.lines), tl.lines[0], stderrTailLines)
	}
	tl = stderrTail{}
	for range 10 {
		tl.add(strings.Repeat("y", 1000))
	}
	if tl.size > stderrTailBytes || len(tl.lines) != 4 {
		t.Errorf("kept %d lines, %d bytes; want at most %d bytes", len(tl.lines), tl.size, stderrTailBytes)
	}
	tl.add(strings.Repeat("z", 2*stderrTailBytes))
	if len(tl.lines) != 1 {
		t.Errorf("an over-long newest line left %d lines; want it alone", len(tl.lines))
	}
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("a", stderrMaxLine+100)
	in := "one\r\ntwo\n" + long + "\nthree"
	var got []string
	readLines(strings.NewReader(in), func(l string) { got = append(got, l) })
	want := []string{"one", "two", long[:stderrMaxLine], "three"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q; want %q", got, want)
	}
}

// A group that does not empty (simulated) leaves Gone open, yet the
// teardown's bounded part ends within the termination window, releasing
// the pipes; the leader stays pinned while the group is watched, and Gone
// closes once the group empties.
func TestStdioGroupThatNeverEmpties(t *testing.T) {
	var alive atomic.Bool
	alive.Store(true)
	path, args, m := fixture.CommandEnv("normal")
	s := &Stdio{
		Command: path, Args: args, Env: m,
		// The stdin grace is long enough for the child to exit on its own
		// on a loaded machine (the status says so), the others short.
		StdinGrace: 500 * time.Millisecond, TermGrace: 50 * time.Millisecond, KillGrace: 50 * time.Millisecond,
		hooks: &stdioHooks{groupAlive: func(int) bool { return alive.Load() }},
	}
	gen, err := s.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	g := gen.(*stdioGen)
	start := time.Now()
	g.Terminate()
	select {
	case <-g.reaped:
	case <-time.After(s.TerminationWindow() + 5*time.Second):
		t.Fatal("teardown did not end")
	}
	took := time.Since(start)
	if took > s.TerminationWindow() {
		t.Errorf("teardown took %v; window %v", took, s.TerminationWindow())
	}
	if isClosed(g.Gone()) {
		t.Error("Gone closed although the group never emptied")
	}
	if isClosed(g.leaderGone) {
		t.Error("the leader was reaped while its group is watched")
	}
	if groupAlive(g.pgid) {
		t.Error("child's group really alive")
	}
	alive.Store(false)
	select {
	case <-g.Gone():
	case <-time.After(lateWatchMin + 5*time.Second):
		t.Fatal("Gone did not close once the group emptied")
	}
	if !isClosed(g.leaderGone) {
		t.Error("Gone closed before the leader was reaped")
	}
	if st := g.Exit().Status; st != "exit status 0" {
		t.Errorf("status %q; want exit status 0 (stdin closed)", st)
	}
}
