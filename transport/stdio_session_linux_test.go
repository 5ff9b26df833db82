package transport_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A stdio child leads a process group of its own, and is in a session of
// its own only under a controlling terminal (spawnAttr): without one there
// is no terminal to stop it on SIGTTIN, and a new session would be a new
// scheduling group where the kernel groups by session (autogroup,
// docs/design.md §20).
func TestStdioChildSessionFollowsTheTerminal(t *testing.T) {
	s := fixtureStdio(t, "normal")
	_, pid := open(t, s)
	pgrp, sid := groupAndSession(t, pid)
	if pgrp != pid {
		t.Errorf("child %d is in process group %d; want its own", pid, pgrp)
	}
	own, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	if haveTTY() {
		if sid != pid {
			t.Errorf("under a controlling terminal the child %d is in session %d; want its own", pid, sid)
		}
	} else if sid != own {
		t.Errorf("without a controlling terminal the child %d is in session %d; want mcpkeep's (%d)", pid, sid, own)
	}
}

// groupAndSession reads pid's process group and session from /proc.
func groupAndSession(t *testing.T, pid int) (pgrp, sid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// After "pid (comm) ": state ppid pgrp session ...
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 4 {
		t.Fatalf("short /proc/%d/stat: %q", pid, b)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return pgrp, sid
}

// haveTTY reports whether the test process has a controlling terminal.
func haveTTY() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
