package main

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// The start's heap cap follows a small container's memory and stays at
// startHeapCap where there is room or nothing is known.
func TestStartCap(t *testing.T) {
	for _, c := range []struct {
		limit, want int64
	}{
		{0, startHeapCap},
		{24 << 30, startHeapCap},
		{512 << 20, startHeapCap},
		{256 << 20, 64 << 20},
		{128 << 20, 32 << 20},
		{32 << 20, minStartHeapCap},
	} {
		if got := startCap(c.limit); got != c.want {
			t.Errorf("startCap(%d MiB) = %d MiB, want %d MiB", c.limit>>20, got>>20, c.want>>20)
		}
	}
}

const meminfo = "MemTotal:        2048000 kB\nMemFree:         1000000 kB\n"

// memoryLimit reads the process's cgroup (v1 or v2, its own or the
// mount's root) and MemTotal, takes the least, and reads what is not a
// limit as none.
func TestMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	total := int64(2048000) << 10
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"nothing readable", fstest.MapFS{}, 0},
		{"machine only", fstest.MapFS{"proc/meminfo": file(meminfo)}, total},
		{"v2, own cgroup", fstest.MapFS{
			"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("268435456\n"),
			"sys/fs/cgroup/memory.max":                  file("max\n"),
			"proc/meminfo":                              file(meminfo),
		}, 256 << 20},
		{"v2, namespaced: the mount's root", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("134217728"),
			"proc/meminfo":             file(meminfo),
		}, 128 << 20},
		{"v2, host's path not mounted: the root", fstest.MapFS{
			"proc/self/cgroup":         file("0::/docker/abc\n"),
			"sys/fs/cgroup/memory.max": file("134217728\n"),
		}, 128 << 20},
		{"v2 max: the machine's", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
			"proc/meminfo":             file(meminfo),
		}, total},
		{"v1 with other controllers", fstest.MapFS{
			"proc/self/cgroup": file("9:pids:/x\n4:cpuacct,memory:/docker/abc\n0::/\n"),
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("536870912\n"),
			"proc/meminfo": file(meminfo),
		}, 512 << 20},
		{"v1 unlimited", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
			"proc/meminfo":                               file(meminfo),
		}, total},
		{"a limit above the machine's memory", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("4294967296\n"),
			"proc/meminfo":             file(meminfo),
		}, total},
		{"garbage everywhere", fstest.MapFS{
			"proc/self/cgroup":         file("::\nnot a line\n0::relative\n" + strings.Repeat("x", 100<<10)),
			"sys/fs/cgroup/memory.max": file("-5\n"),
			"proc/meminfo":             file("MemTotal: lots kB\nMemTotal: -1 kB\n"),
		}, 0},
		{"a limit file that is garbage: the root's", fstest.MapFS{
			"proc/self/cgroup":           file("0::/a\n"),
			"sys/fs/cgroup/a/memory.max": file("twelve\n"),
			"sys/fs/cgroup/memory.max":   file("100000000\n"),
			"proc/meminfo":               file(meminfo),
		}, 100000000},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := memoryLimit(c.fs); got != c.want {
				t.Errorf("memoryLimit = %d, want %d", got, c.want)
			}
		})
	}
}

// On this machine, whatever it is, the limit read is positive and no
// more than the machine's memory.
func TestMemoryLimitHere(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo on this system")
	}
	got := memoryLimit(os.DirFS("/"))
	total := memTotal(readSmall(os.DirFS("/"), "proc/meminfo"))
	if got <= 0 || got > total {
		t.Fatalf("memoryLimit here = %d, want in (0, MemTotal %d]", got, total)
	}
}
