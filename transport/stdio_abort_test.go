//go:build unix

package transport_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

// abortStdinGrace is the stdin grace of the Abort tests: far longer than
// any of their bounds, so a teardown that waited it fails them.
const abortStdinGrace = 5 * time.Second

// abortBound bounds Gone after Abort: SIGTERM goes out at once.
const abortBound = time.Second

// deafStdio runs a server that never answers and ignores the end of its
// stdin, but exits on SIGTERM (a server hung in its startup).
func deafStdio() *transport.Stdio {
	return &transport.Stdio{
		Command:    "/bin/sh",
		Args:       []string{"-c", "exec sleep 60"},
		Server:     "deaf",
		StdinGrace: abortStdinGrace, TermGrace: testTermGrace, KillGrace: testKillGrace,
	}
}

func aborter(t *testing.T, g transport.Generation) transport.Aborter {
	t.Helper()
	a, ok := g.(transport.Aborter)
	if !ok {
		t.Fatalf("stdio generation %T is not a transport.Aborter", g)
	}
	return a
}

// R30: a hung handshake (connect timeout) is aborted without the stdin
// grace. (hang-init also exits when its stdin ends, so either ending is
// fine; what matters is how soon.)
func TestStdioAbortAfterHungHandshake(t *testing.T) {
	s := fixtureStdio(t, "hang-init")
	s.StdinGrace = abortStdinGrace
	check := recordGroup(s)
	g, pid := open(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if cs, err := newClient().Connect(ctx, g.Transport(), nil); err == nil {
		cs.Close()
		t.Fatal("Connect succeeded against hang-init")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect: %v; want deadline exceeded", err)
	}
	aborter(t, g).Abort()
	took := waitGone(t, g, abortBound)
	t.Logf("hang-init: Gone %v after Abort (stdin grace %v)", took, abortStdinGrace)
	assertGroupGone(t, pid)
	if st := g.Exit().Status; st != "exit status 0" && st != "signal: terminated" {
		t.Errorf("Exit().Status = %q; want exit status 0 (stdin ended) or signal: terminated", st)
	}
	check(t, pid)
}

// A server deaf to its stdin's end is SIGTERMed at once by Abort; Abort and
// Terminate together, from several goroutines, are one teardown.
func TestStdioAbortSkipsStdinGrace(t *testing.T) {
	s := deafStdio()
	check := recordGroup(s)
	g, pid := open(t, s)
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(aborter(t, g).Abort)
	}
	wg.Go(g.Terminate)
	wg.Wait() // none blocks
	waitGone(t, g, abortBound)
	t.Logf("deaf server: Gone %v after Abort (stdin grace %v)", time.Since(start), abortStdinGrace)
	assertGroupGone(t, pid)
	if st := g.Exit().Status; st != "signal: terminated" {
		t.Errorf("Exit().Status = %q; want signal: terminated", st)
	}
	aborter(t, g).Abort() // after Gone: a no-op
	g.Terminate()
	check(t, pid)
}

// Abort during the stdin grace that Terminate started cuts it short.
func TestStdioAbortCutsTerminatesGrace(t *testing.T) {
	s := deafStdio()
	logs := newMsgLog()
	s.Logger = slog.New(logs)
	check := recordGroup(s)
	g, pid := open(t, s)
	g.Terminate()
	logs.wait(t, "stdio: stdin closed")
	aborter(t, g).Abort()
	took := waitGone(t, g, abortBound)
	t.Logf("deaf server: Gone %v after Abort in the stdin grace (%v)", took, abortStdinGrace)
	assertGroupGone(t, pid)
	if st := g.Exit().Status; st != "signal: terminated" {
		t.Errorf("Exit().Status = %q; want signal: terminated", st)
	}
	check(t, pid)
}

// msgLog is a slog.Handler that keeps every record's message and lets a
// test wait for one.
type msgLog struct {
	mu    sync.Mutex
	msgs  []string
	added chan struct{}
}

func newMsgLog() *msgLog { return &msgLog{added: make(chan struct{}, 1)} }

func (l *msgLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *msgLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *msgLog) WithGroup(string) slog.Handler            { return l }
func (l *msgLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return nil
}

// wait waits for a record whose message starts with prefix.
func (l *msgLog) wait(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.NewTimer(stdioTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, m := range l.msgs {
			if strings.HasPrefix(m, prefix) {
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline.C:
			t.Fatalf("no log record %q within %v", prefix, stdioTimeout)
		}
	}
}
