package transport_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// A stdio child leads a session and a process group of its own
// (spawnAttr), with or without a controlling terminal (docs/design.md §8).
func TestStdioChildLeadsItsSession(t *testing.T) {
	s := fixtureStdio(t, "normal")
	_, pid := open(t, s)
	pgrp, sid := groupAndSession(t, pid)
	if pgrp != pid {
		t.Errorf("child %d is in process group %d; want its own", pid, pgrp)
	}
	if sid != pid {
		t.Errorf("child %d is in session %d; want its own", pid, sid)
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
