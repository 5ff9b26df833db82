package transport

import (
	"os"
	"strconv"
)

// groupHasLiveMember reports whether a process of group pgid is not a
// zombie. kill(-pgid, 0) also counts zombies: the group's own leader stays
// one until its group is empty (see stdioGen), and an orphaned grandchild
// that died stays a zombie until init reaps it, which some inits (in
// containers and sandboxes) do only every few seconds. A zombie holds no
// pipe, file or memory, so it does not keep a generation alive. Without a
// readable /proc, kill's answer stands.
func groupHasLiveMember(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	seen := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		seen = true
		state, pgrp, ok := procState(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return !seen // an empty or foreign /proc proves nothing
}

// procState reads the state and process group of pid from /proc/pid/stat.
// The second field (comm) may hold spaces and parentheses, so fields are
// counted after its last ')': " state ppid pgrp ...".
func procState(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
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
	pgrp, err = strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
