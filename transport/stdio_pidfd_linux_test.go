package transport

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// With a pidfd the exit is awaited in the poller and read without
// reaping: the child stays a zombie, its status is the one cmd.Wait
// reports, and the pidfd is closed.
func TestAwaitExitPidfd(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pidfd := askPidfd(cmd.SysProcAttr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if *pidfd < 0 {
		t.Skip("the kernel gave no pidfd (CLONE_PIDFD is Linux 5.2)")
	}
	fdPath := "/proc/self/fd/" + strconv.Itoa(*pidfd)
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		ws, err := awaitExit(*pidfd, pid)
		if err != nil {
			t.Errorf("awaitExit: %v", err)
		}
		done <- ws
	}()
	stdin.Close() // sh exits
	ws := <-done
	if got := waitStatusString(ws); got != "exit status 1" {
		t.Errorf("status %q; want exit status 1", got)
	}
	if w := ExitWatch(); w != watchPidfd {
		t.Errorf("ExitWatch() = %q; want %q", w, watchPidfd)
	}
	if st, pgrp, ok := procState(pid); !ok || st != 'Z' || pgrp != pid {
		t.Errorf("leader after awaitExit: state %q group %d (found %v); want a zombie leading its group", st, pgrp, ok)
	}
	if l, err := os.Readlink(fdPath); err == nil && l == "anon_inode:[pidfd]" {
		t.Errorf("pidfd %s still open", fdPath)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.String() != "exit status 1" {
		t.Errorf("Wait after awaitExit: %v (%v)", err, cmd.ProcessState)
	}
}
