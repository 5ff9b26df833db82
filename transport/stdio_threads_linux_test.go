package transport_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// threads is this process's OS thread count (they are never given back).
func threads(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// A running child costs no OS thread: its exit is awaited through a pidfd
// in the runtime's poller, where a waiter blocked in waitid held one
// thread per child (a proxy of 50 servers had 50 more threads).
func TestStdioWaitersHoldNoThread(t *testing.T) {
	const n = 12
	s := fixtureStdio(t, "normal")
	before := threads(t)
	for range n {
		g, _ := open(t, s)
		connect(t, g) // the child is up and its waiter long started
	}
	if grew := threads(t) - before; grew >= n/2 {
		t.Errorf("%d running children added %d OS threads; want fewer than %d", n, grew, n/2)
	}
}
