package transport

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in    string
		state byte
		pgrp  int
		ok    bool
	}{
		{"123 (sh) S 1 456 456 0 -1 4194560 ...\n", 'S', 456, true},
		{"123 (a b) (c)) Z 1 77 77 0", 'Z', 77, true}, // comm with spaces and parentheses
		{"123 (trunc) R 1 9", 'R', 9, true},           // a short read still has pgrp
		{"123 (x) R 1", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		st, pg, ok := parseStat([]byte(tc.in))
		if st != tc.state || pg != tc.pgrp || ok != tc.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tc.in, st, pg, ok, tc.state, tc.pgrp, tc.ok)
		}
	}
}

// The probe sees a live group, and a group whose only member is its
// unreaped leader as gone, although kill(-pgid, 0) still finds the zombie.
func TestGroupProbeZombieLeader(t *testing.T) {
	if !groupHasLiveMember(syscall.Getpgrp()) {
		t.Error("own process group reported empty")
	}
	cmd := exec.Command("/bin/sh", "-c", "read x")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !groupAlive(pid) {
		t.Error("running group reported gone")
	}
	stdin.Close() // sh exits
	ws, err := waitExited(pid)
	if err != nil {
		t.Fatalf("waitExited: %v", err)
	}
	if got := waitStatusString(ws); got != "exit status 1" {
		t.Errorf("status %q; want exit status 1 (read at EOF)", got)
	}
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Errorf("kill(-pgid, 0) with a zombie leader: %v; want success (the zombie pins the group)", err)
	}
	if st, _, ok := procState(pid); !ok || st != 'Z' {
		t.Errorf("leader state %q (found %v); want a zombie", st, ok)
	}
	if groupAlive(pid) {
		t.Error("a group of one zombie reported alive")
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.String() != "exit status 1" {
		t.Errorf("Wait after waitExited: %v (%v)", err, cmd.ProcessState)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(-pgid, 0) after the reap: %v; want ESRCH", err)
	}
}

// The probe reads the stat file of the group's members only: a group of
// one process costs one read however many processes the host runs, where
// reading every process's stat cost hundreds of microseconds per exit.
func TestGroupProbeReadsMembersOnly(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	pid := cmd.Process.Pid
	var reads []string
	counting := func(proc int, name string, buf []byte) (byte, int, bool) {
		reads = append(reads, name)
		return readStat(proc, name, buf)
	}
	if !scanGroup(pid, counting) {
		t.Error("running group reported gone")
	}
	if want := strconv.Itoa(pid); len(reads) != 1 || reads[0] != want {
		t.Errorf("stat files read for a group of one: %v; want only %s's", reads, want)
	}
	reads = nil
	if scanGroup(pid+1_000_000, counting) {
		t.Error("a group with no member reported alive")
	}
	if len(reads) != 0 {
		t.Errorf("%d stat files read for a group with no member; want none", len(reads))
	}
}
