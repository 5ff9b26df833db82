package transport

import (
	"errors"
	"os/exec"
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
