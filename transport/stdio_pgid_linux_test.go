package transport_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"syscall"
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// R27: no signal is sent to a process group whose leader was reaped. The
// generations under test record, through internal hooks, every probe of
// and signal to their group, and the moment the leader is reaped.

// recordGroup makes s's generations record what they do to their group;
// the returned check asserts, once Gone closed, that the leader was reaped
// exactly once, after every probe and signal, and that the pgid was pinned
// by its own leader (running or a zombie) at each of them.
func recordGroup(s *transport.Stdio) func(t *testing.T, pgid int) {
	rec := transport.RecordGroup(s)
	return func(t *testing.T, pgid int) {
		t.Helper()
		checkGroupEvents(t, rec.Events(), pgid)
	}
}

func checkGroupEvents(t *testing.T, events []transport.GroupEvent, pgid int) {
	t.Helper()
	reaped := -1
	for i, e := range events {
		what := e.Kind
		if e.Kind == "signal" {
			what += " " + e.Signal.String()
		}
		if e.Pgid != pgid {
			t.Errorf("event %d: %s of pgid %d; want %d", i, what, e.Pgid, pgid)
		}
		if e.Kind == "reaped" {
			if reaped >= 0 {
				t.Errorf("event %d: leader reaped again (first at %d)", i, reaped)
			}
			reaped = i
			continue
		}
		if reaped >= 0 {
			t.Errorf("event %d: %s after the leader was reaped (event %d)", i, what, reaped)
		}
		if !e.Pinned {
			t.Errorf("event %d: %s while process %d was not the leader of group %d", i, what, pgid, pgid)
		}
	}
	if reaped < 0 {
		t.Errorf("leader never reaped (events %+v)", events)
	}
}

func signalsOf(events []transport.GroupEvent) (sigs []syscall.Signal, leaderStates []byte) {
	for _, e := range events {
		if e.Kind == "signal" {
			sigs = append(sigs, e.Signal)
			leaderStates = append(leaderStates, e.Leader)
		}
	}
	return sigs, leaderStates
}

// The child dies while a grandchild holds its group: the loss is seen at
// once with its status, the leader stays a zombie (pinning the pgid) while
// the group lives on, Abort cuts the stdin grace short, the group is
// SIGTERMed with the zombie still in it, and only then is the leader
// reaped.
func TestStdioLeaderStaysZombieUntilGroupEmpty(t *testing.T) {
	s := fixtureStdio(t, "grandchild")
	s.StdinGrace = abortStdinGrace
	logs := newLineLog()
	s.Logger = slog.New(logs)
	rec := transport.RecordGroup(s)
	g, pgid := open(t, s)
	cs := connect(t, g)
	m := grandchildRE.FindStringSubmatch(logs.waitLine(t, "fixture: grandchild pid="))
	gpid, _ := strconv.Atoi(m[1])

	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	if _, err := callText(ctx, cs, "die", nil); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("die: %v; want a connection error", err)
	}
	waitSession(t, cs)
	assertExitKnownAtLoss(t, g, "exit status 4", "exiting with status 4 (die tool)")
	// The stdin grace (5 s) has not passed: the group lives on through the
	// grandchild, and the leader is an unreaped zombie.
	if st, pgrp, ok := transport.ProcState(pgid); !ok || st != 'Z' || pgrp != pgid {
		t.Errorf("leader %d after its exit: state %q group %d (found %v); want a zombie leading its group", pgid, st, pgrp, ok)
	}
	if !fixture.Alive(gpid) {
		t.Fatal("grandchild died with the child: the test proves nothing")
	}
	if isDone(g.Gone()) {
		t.Fatal("Gone closed while the grandchild lives")
	}

	aborter(t, g).Abort()
	took := waitGone(t, g, abortBound)
	t.Logf("grandchild holding the group: Gone %v after Abort", took)
	assertGroupGone(t, pgid)
	if fixture.Alive(gpid) {
		t.Errorf("grandchild %d alive after Gone", gpid)
	}
	if st, pgrp, ok := transport.ProcState(pgid); ok && st == 'Z' && pgrp == pgid {
		t.Errorf("leader %d still a zombie after Gone", pgid)
	}
	if st := g.Exit().Status; st != "exit status 4" {
		t.Errorf("Exit().Status = %q; want exit status 4", st)
	}
	events := rec.Events()
	checkGroupEvents(t, events, pgid)
	sigs, states := signalsOf(events)
	if len(sigs) != 1 || sigs[0] != syscall.SIGTERM || states[0] != 'Z' {
		t.Errorf("signals %v with leader states %q; want one SIGTERM, sent while the leader was a zombie", sigs, states)
	}
}

// The same holds when no signal is needed (a plain exit) and when the
// whole escalation runs (ignore-term).
func TestStdioNoSignalAfterReap(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		end        func(t *testing.T, g transport.Generation, s *transport.Stdio)
		status     string
		signals    []syscall.Signal
	}{
		{name: "die", mode: "normal", status: "exit status 4",
			end: func(t *testing.T, g transport.Generation, _ *transport.Stdio) {
				cs := connect(t, g)
				ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
				defer cancel()
				callText(ctx, cs, "die", nil)
				waitSession(t, cs)
			}},
		{name: "orderly", mode: "normal", status: "exit status 0",
			end: func(t *testing.T, g transport.Generation, _ *transport.Stdio) {
				cs := connect(t, g)
				cs.Close()
				g.Terminate()
			}},
		{name: "ignore-term", mode: "ignore-term", status: "signal: killed",
			signals: []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL},
			end: func(t *testing.T, g transport.Generation, _ *transport.Stdio) {
				cs := connect(t, g)
				cs.Close()
				g.Terminate()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixtureStdio(t, tc.mode)
			rec := transport.RecordGroup(s)
			g, pgid := open(t, s)
			tc.end(t, g, s)
			waitGone(t, g, s.TerminationWindow())
			assertGroupGone(t, pgid)
			if st := g.Exit().Status; st != tc.status {
				t.Errorf("Exit().Status = %q; want %q", st, tc.status)
			}
			events := rec.Events()
			checkGroupEvents(t, events, pgid)
			if sigs, _ := signalsOf(events); len(sigs) != len(tc.signals) || (len(sigs) > 0 && (sigs[0] != tc.signals[0] || sigs[1] != tc.signals[1])) {
				t.Errorf("signals %v; want %v", sigs, tc.signals)
			}
		})
	}
}
