package transport

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// groupHasLiveMember reports whether a process of group pgid is not a
// zombie. kill(-pgid, 0) also counts zombies: the group's own leader stays
// one until its group is empty (see stdioGen), and an orphaned grandchild
// that died stays a zombie until init reaps it, which some inits (in
// containers and sandboxes) do only every few seconds. A zombie holds no
// pipe, file or memory, so it does not keep a generation alive. Without a
// readable /proc, kill's answer stands.
//
// The kernel has no call that lists a group's members, and the leader's
// zombie keeps kill from ever answering ESRCH, so this runs at every exit:
// it lists /proc (one getdents per batch) and asks getpgid of each
// process, a system call of well under a microsecond that reads no file;
// only the group's own members (normally the leader alone) have their
// /proc/<pid>/stat read for their state. Reading every process's stat, as
// this did before, cost a few microseconds each: hundreds of microseconds
// per exit on a busy host, competing with the goroutines that deliver the
// loss.
func groupHasLiveMember(pgid int) bool { return scanGroup(pgid, readStat) }

// scanGroup is groupHasLiveMember, reading the stat of a process through
// stat.
func scanGroup(pgid int, stat func(proc int, name string, buf []byte) (state byte, pgrp int, ok bool)) bool {
	dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer unix.Close(dir)
	var (
		ents  [8192]byte
		buf   [1024]byte // the fields up to pgrp come within the first ~100 bytes
		names []string
		seen  bool
		n     int
	)
	for {
		nb, err := unix.ReadDirent(dir, ents[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return true
		}
		if nb == 0 {
			return !seen // an empty or foreign /proc proves nothing
		}
		_, _, names = unix.ParseDirent(ents[:nb], -1, names[:0])
		for _, name := range names {
			pid, ok := parsePid(name)
			if !ok {
				continue // not a process
			}
			seen = true
			if n++; n%256 == 0 {
				runtime.Gosched()
			}
			if pg, err := unix.Getpgid(pid); err == unix.ESRCH || (err == nil && pg != pgid) {
				continue // gone, or not a member
			}
			// A member, or one getpgid may not ask about (a security
			// module's EPERM): its stat tells.
			state, pgrp, ok := stat(dir, name, buf[:])
			if ok && pgrp == pgid && state != 'Z' && state != 'X' {
				return true
			}
		}
	}
}

// parsePid parses a /proc entry's name as a process id.
func parsePid(name string) (int, bool) {
	if name == "" || name[0] < '1' || name[0] > '9' || len(name) > 9 {
		return 0, false
	}
	pid := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, true
}

// readStat reads the state and process group from <proc>/name/stat into
// buf; ok is false if the process is gone or the file is not as expected.
func readStat(proc int, name string, buf []byte) (state byte, pgrp int, ok bool) {
	fd, err := unix.Openat(proc, name+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	return parseStat(buf[:n])
}

// procState reads the state and process group of pid from /proc/pid/stat.
// The second field (comm) may hold spaces and parentheses, so fields are
// counted after its last ')': " state ppid pgrp ...".
func procState(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseStat(b)
}

// parseStat parses the state and process group out of the contents of a
// /proc/pid/stat file (or their beginning).
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return 0, 0, false
	}
	var fields [3][]byte
	n, start := 0, -1
	for j := i + 1; j <= len(b) && n < 3; j++ {
		if j == len(b) || b[j] == ' ' || b[j] == '\n' {
			if start >= 0 {
				fields[n] = b[start:j]
				n++
				start = -1
			}
		} else if start < 0 {
			start = j
		}
	}
	if n < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
