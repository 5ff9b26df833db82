//go:build unix

package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

var _ transport.Opener = (*transport.Stdio)(nil)

func TestStdioEchoAndOrderlyClose(t *testing.T) {
	s := fixtureStdio(t, "normal")
	logs := newLineLog()
	s.Logger = slog.New(logs)
	g, pid := open(t, s)
	cs := connect(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	if got, err := callText(ctx, cs, "echo", map[string]any{"text": "hello"}); err != nil || got != "hello" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	logs.waitLine(t, "fixture: mode=normal pid="+strconv.Itoa(pid))
	if a := logs.attrs; a["server"] != "fixture" || a["gen"] != "1" {
		t.Errorf("stderr log attrs = %v; want server=fixture gen=1", a)
	}

	// The supervisor's order: Close the session (stdin ends, the fixture
	// exits 0), Terminate, wait for Gone.
	start := time.Now()
	cs.Close()
	g.Terminate()
	g.Terminate() // idempotent
	waitGone(t, g, s.TerminationWindow())
	t.Logf("orderly close: Gone after %v", time.Since(start))
	assertGroupGone(t, pid)
	if st := g.Exit().Status; st != "exit status 0" {
		t.Errorf("Exit().Status = %q; want exit status 0", st)
	}
	if tail := g.Exit().StderrTail; !strings.Contains(tail, "fixture: mode=normal") {
		t.Errorf("StderrTail = %q", tail)
	}
}

func TestStdioDieFailsPendingCallAndCompletesBarrier(t *testing.T) {
	s := fixtureStdio(t, "normal")
	g, pid := open(t, s)
	cs := connect(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()

	start := time.Now()
	_, err := callText(ctx, cs, "die", nil)
	failed := time.Since(start)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("die: %v; want a connection error", err)
	}
	if failed > time.Second {
		t.Errorf("pending call failed after %v; want < 1s", failed)
	}
	assertExitKnownAtLoss(t, g, "exit status 4", "exiting with status 4 (die tool)")
	waitSession(t, cs)
	// No Terminate: the child's own exit starts the teardown.
	gone := waitGone(t, g, s.TerminationWindow())
	t.Logf("die: call failed after %v (%v), Gone %v later", failed, err, gone)
	assertGroupGone(t, pid)
	ex := g.Exit()
	if ex.Status != "exit status 4" {
		t.Errorf("Exit().Status = %q; want exit status 4", ex.Status)
	}
	if !strings.Contains(ex.StderrTail, "exiting with status 4 (die tool)") {
		t.Errorf("StderrTail = %q", ex.StderrTail)
	}
}

func TestStdioCrashReplyIsDelivered(t *testing.T) {
	s := fixtureStdio(t, "normal")
	g, _ := open(t, s)
	cs := connect(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	if got, err := callText(ctx, cs, "crash", nil); err != nil || got != "bye" {
		t.Fatalf("crash = %q, %v; want bye", got, err)
	}
	waitSession(t, cs)
	waitGone(t, g, s.TerminationWindow())
	if st := g.Exit().Status; st != "exit status 3" {
		t.Errorf("Exit().Status = %q; want exit status 3", st)
	}
}

// exit-after=0 writes its tools/list reply and exits at once: the reply
// must not be lost to the fast loss detection.
func TestStdioReplyJustBeforeExitIsDelivered(t *testing.T) {
	for i := range 5 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			s := fixtureStdio(t, "exit-after=0")
			g, _ := open(t, s)
			cs := connect(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
			defer cancel()
			res, err := cs.ListTools(ctx, nil)
			if err != nil || len(res.Tools) == 0 {
				t.Fatalf("ListTools = %v, %v", res, err)
			}
			waitSession(t, cs)
			waitGone(t, g, s.TerminationWindow())
			if st := g.Exit().Status; st != "exit status 5" {
				t.Errorf("Exit().Status = %q; want exit status 5", st)
			}
		})
	}
}

func TestStdioExternalKillIsSeen(t *testing.T) {
	s := fixtureStdio(t, "normal")
	g, pid := open(t, s)
	cs := connect(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()

	callErr := make(chan error, 1)
	go func() {
		_, err := callText(ctx, cs, "hang", nil)
		callErr <- err
	}()
	// Make sure the call is in flight: an echo after it has been read.
	if _, err := callText(ctx, cs, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-callErr:
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("hang after SIGKILL: %v; want a connection error", err)
		}
		t.Logf("external SIGKILL: pending call failed after %v", time.Since(start))
		assertExitKnownAtLoss(t, g, "signal: killed", "fixture: mode=normal")
	case <-ctx.Done():
		t.Fatal("pending call did not fail after SIGKILL")
	}
	waitSession(t, cs)
	waitGone(t, g, s.TerminationWindow())
	if st := g.Exit().Status; st != "signal: killed" {
		t.Errorf("Exit().Status = %q; want signal: killed", st)
	}
}

var grandchildRE = regexp.MustCompile(`fixture: grandchild pid=(\d+)`)

// A grandchild holding stdout must not delay loss detection, and the
// barrier must take the grandchild down too.
func TestStdioGrandchildDoesNotDelayLoss(t *testing.T) {
	s := fixtureStdio(t, "grandchild")
	logs := newLineLog()
	s.Logger = slog.New(logs)
	g, pgid := open(t, s)
	cs := connect(t, g)
	m := grandchildRE.FindStringSubmatch(logs.waitLine(t, "fixture: grandchild pid="))
	gpid, _ := strconv.Atoi(m[1])
	if got, err := syscall.Getpgid(gpid); err != nil || got != pgid {
		t.Fatalf("grandchild %d: group %d, %v; want %d", gpid, got, err, pgid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	start := time.Now()
	if _, err := callText(ctx, cs, "echo", map[string]any{"text": "rtt"}); err != nil {
		t.Fatal(err)
	}
	rtt := time.Since(start)
	start = time.Now()
	_, err := callText(ctx, cs, "die", nil)
	failed := time.Since(start)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("die: %v; want a connection error", err)
	}
	if failed > 100*time.Millisecond {
		t.Errorf("pending call failed after %v with a grandchild holding stdout; want < 100ms", failed)
	}
	if !fixture.Alive(gpid) {
		t.Fatal("grandchild died with the child: the test proves nothing")
	}
	// The grandchild holds stderr too: the tail is still complete.
	assertExitKnownAtLoss(t, g, "exit status 4", "exiting with status 4 (die tool)")
	waitSession(t, cs)
	gone := waitGone(t, g, s.TerminationWindow())
	t.Logf("grandchild holding stdout: die failed after %v (echo round trip %v; %v); Gone %v later", failed, rtt, err, gone)
	assertGroupGone(t, pgid)
	if fixture.Alive(gpid) {
		t.Errorf("grandchild %d alive after Gone", gpid)
	}
	if st := g.Exit().Status; st != "exit status 4" {
		t.Errorf("Exit().Status = %q; want exit status 4", st)
	}
}

func TestStdioTerminateKillsIgnoreTerm(t *testing.T) {
	s := fixtureStdio(t, "ignore-term")
	g, pid := open(t, s)
	cs := connect(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	if _, err := callText(ctx, cs, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cs.Close()
	// Terminate from several goroutines at once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(g.Terminate)
	}
	wg.Wait()
	took := waitGone(t, g, s.TerminationWindow())
	t.Logf("ignore-term: Gone %v after Terminate (window %v)", time.Since(start), s.TerminationWindow())
	if min := testStdinGrace + testTermGrace; took < min-10*time.Millisecond {
		t.Errorf("Gone after %v; ignore-term cannot end before stdin and SIGTERM graces (%v)", took, min)
	}
	assertGroupGone(t, pid)
	if st := g.Exit().Status; st != "signal: killed" {
		t.Errorf("Exit().Status = %q; want signal: killed", st)
	}
}

func TestStdioHangInitConnectTimesOut(t *testing.T) {
	s := fixtureStdio(t, "hang-init")
	g, pid := open(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cs, err := newClient().Connect(ctx, g.Transport(), nil)
	if err == nil {
		cs.Close()
		t.Fatal("Connect succeeded against hang-init")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect: %v; want deadline exceeded", err)
	}
	g.Terminate()
	waitGone(t, g, s.TerminationWindow())
	assertGroupGone(t, pid)
	// The failed Connect closed stdin, on which hang-init exits 0.
	if st := g.Exit().Status; st != "exit status 0" {
		t.Errorf("Exit().Status = %q; want exit status 0", st)
	}
}

// With a mock clock, the graces pass only when the clock is advanced.
func TestStdioGracesFollowTheClock(t *testing.T) {
	s := fixtureStdio(t, "ignore-term")
	mock := clock.NewMock()
	s.Clock = mock
	s.StdinGrace, s.TermGrace, s.KillGrace = time.Hour, time.Hour, time.Hour
	g, pid := open(t, s)
	connect(t, g)
	g.Terminate()
	deadline := time.After(stdioTimeout)
	for !isDone(g.Gone()) {
		if !fixture.Alive(pid) {
			break // killed: Gone follows promptly
		}
		select {
		case <-deadline:
			t.Fatal("ignore-term not killed while advancing the mock clock")
		case <-time.After(10 * time.Millisecond):
			mock.Add(30 * time.Minute)
		}
	}
	waitGone(t, g, stdioTimeout)
	if st := g.Exit().Status; st != "signal: killed" {
		t.Errorf("Exit().Status = %q; want signal: killed", st)
	}
}

// assertExitKnownAtLoss checks, as soon as the client has seen the loss,
// that the status and the child's last stderr line are already known (the
// supervisor logs them at that moment).
func assertExitKnownAtLoss(t *testing.T, g transport.Generation, status, lastLine string) {
	t.Helper()
	ex := g.Exit()
	if ex.Status != status {
		t.Errorf("at loss: Exit().Status = %q; want %q", ex.Status, status)
	}
	if !strings.Contains(ex.StderrTail, lastLine) {
		t.Errorf("at loss: StderrTail = %q; want it to contain %q", ex.StderrTail, lastLine)
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestStdioMissingCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		dir  string
		want error
	}{
		{cmd: "mcpkeep-no-such-server-7f3a", want: exec.ErrNotFound},
		{cmd: "/nonexistent/mcpkeep/server", want: fs.ErrNotExist},
		{cmd: "/bin/sh", dir: "/nonexistent/mcpkeep-dir", want: fs.ErrNotExist},
	} {
		s := &transport.Stdio{Command: tc.cmd, Dir: tc.dir}
		g, err := s.Open(context.Background(), 1)
		if err == nil {
			g.Terminate()
			<-g.Gone()
			t.Errorf("Open(%q) succeeded", tc.cmd)
			continue
		}
		var se *transport.StartError
		if !errors.As(err, &se) || se.Command != tc.cmd {
			t.Errorf("Open(%q) error %v is not a StartError naming the command", tc.cmd, err)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("Open(%q) error %v; want errors.Is %v", tc.cmd, err, tc.want)
		}
		if !strings.Contains(err.Error(), tc.cmd) {
			t.Errorf("Open(%q) error %q does not name the command", tc.cmd, err)
		}
	}
}

func TestStdioOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := fixtureStdio(t, "normal")
	if g, err := s.Open(ctx, 1); !errors.Is(err, context.Canceled) {
		if g != nil {
			g.Terminate()
			<-g.Gone()
		}
		t.Fatalf("Open with a cancelled ctx: %v", err)
	}
}

func TestStdioEnvExpansionAndDir(t *testing.T) {
	t.Setenv("MCPKEEP_TEST_PARENT", "from-parent")
	t.Setenv("MCPKEEP_TEST_OVERRIDDEN", "parent-value")
	dir := t.TempDir()
	s := &transport.Stdio{
		Command: "/bin/sh",
		Args:    []string{"-c", `echo "A=$MCPKEEP_TEST_A O=$MCPKEEP_TEST_OVERRIDDEN P=$MCPKEEP_TEST_PARENT D=$(pwd -P)" >&2`},
		Env: map[string]string{
			"MCPKEEP_TEST_A":          "x-${MCPKEEP_TEST_PARENT}-$MCPKEEP_TEST_PARENT-${MCPKEEP_TEST_UNSET}-y",
			"MCPKEEP_TEST_OVERRIDDEN": "mine",
		},
		Dir:        dir,
		InheritEnv: true,
		StdinGrace: testStdinGrace, TermGrace: testTermGrace, KillGrace: testKillGrace,
	}
	g, pid := open(t, s)
	waitGone(t, g, s.TerminationWindow())
	assertGroupGone(t, pid)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("A=x-from-parent-from-parent--y O=mine P=from-parent D=%s", real)
	if ex := g.Exit(); ex.StderrTail != want || ex.Status != "exit status 0" {
		t.Errorf("Exit() = %+v; want tail %q, exit status 0", ex, want)
	}
}

func TestStdioStderrTailIsBounded(t *testing.T) {
	s := &transport.Stdio{
		Command: "/bin/sh",
		Args:    []string{"-c", `i=1; while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 7`},
	}
	g, _ := open(t, s)
	waitGone(t, g, s.TerminationWindow())
	var want []string
	for i := 11; i <= 30; i++ {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	if ex := g.Exit(); ex.StderrTail != strings.Join(want, "\n") || ex.Status != "exit status 7" {
		t.Errorf("Exit() = %+v; want the last 20 lines and exit status 7", ex)
	}
}

func TestExpandEnv(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "s3cret", "HOME": "/home/x"}[k]
		return v, ok
	}
	got := transport.ExpandEnv(map[string]string{
		"A": "${TOKEN}",
		"B": "$HOME/bin:${NOPE}",
		"C": "plain",
		"D": "${A}", // values do not see each other
	}, lookup)
	want := map[string]string{"A": "s3cret", "B": "/home/x/bin:", "C": "plain", "D": ""}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ExpandEnv = %v; want %v", got, want)
	}
	if transport.ExpandEnv(nil, lookup) != nil {
		t.Error("ExpandEnv(nil) != nil")
	}
}

func TestStdioTerminationWindow(t *testing.T) {
	var s transport.Stdio
	if got, min := s.TerminationWindow(), transport.DefaultStdinGrace+transport.DefaultTermGrace+transport.DefaultKillGrace; got <= min || got > min+time.Second {
		t.Errorf("default TerminationWindow = %v; want a little over %v", got, min)
	}
}
