package main

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// minStartHeapCap is the least the start's heap cap goes down to under a
// small memory limit: below it the collector runs through the start as
// it would without the pause.
const minStartHeapCap = 16 << 20

// startCap is the start's heap cap (pauseStartGC) for a process that may
// use limit bytes (0: no limit known): startHeapCap, or a quarter of the
// limit when that is less, so a warm start's burst never takes a small
// container to its limit (docs/design.md §20).
func startCap(limit int64) int64 {
	if limit <= 0 {
		return startHeapCap
	}
	return min(startHeapCap, max(limit/4, minStartHeapCap))
}

// memoryLimit is the memory the process may use, read from root (the
// file system at /): the least of its memory cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes) and the machine's MemTotal; 0
// when none can be read. Whatever a file says that is not a limit (max,
// v1's near-2^63 for none, garbage) counts as no limit.
func memoryLimit(root fs.FS) int64 {
	var limit int64
	least := func(n int64) {
		if n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	for _, name := range cgroupLimitFiles(readSmall(root, "proc/self/cgroup")) {
		if n, ok := parseLimit(readSmall(root, name)); ok {
			least(n)
			break
		}
	}
	least(memTotal(readSmall(root, "proc/meminfo")))
	return limit
}

// cgroupLimitFiles are the files that may hold the process's memory
// limit, given its /proc/self/cgroup, most specific first: its own
// cgroup's, then the root of the mount (what a container sees of its
// own cgroup when the path names the host's hierarchy).
func cgroupLimitFiles(selfCgroup []byte) []string {
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(selfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		var dir, file string
		switch {
		case id == "0" && controllers == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		if p != "/" { // the process's own cgroup, then the mount's root
			files = append(files, path.Join(dir, p, file))
		}
		files = append(files, path.Join(dir, file))
	}
	return files
}

// noLimit is where a limit stops being one: cgroup v1 writes about 2^63
// for none.
const noLimit = 1 << 62

// parseLimit reads a cgroup memory limit: ok is false for a file that is
// missing or says nothing usable, and for "max" (no limit).
func parseLimit(b []byte) (int64, bool) {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, false
	}
	if s == "max" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	if n >= noLimit {
		return 0, true
	}
	return n, true
}

// memTotal reads MemTotal (kB) from /proc/meminfo; 0 when absent.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 && kb < noLimit>>10 {
				return kb << 10
			}
		}
	}
	return 0
}

// readSmall reads at most 64 KiB of name (these files are far smaller);
// nil when it cannot.
func readSmall(root fs.FS, name string) []byte {
	f, err := root.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil
	}
	return b
}
