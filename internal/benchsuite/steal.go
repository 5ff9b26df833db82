package benchsuite

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are the machine's CPU times in clock ticks since boot, from
// Linux's /proc/stat: all of them, and those a hypervisor gave to other
// guests while this one had work (steal).
type cpuTimes struct {
	total, steal uint64
	ok           bool
}

// readCPUTimes reads the "cpu" line of /proc/stat; ok is false elsewhere.
func readCPUTimes() cpuTimes {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTimes{}
	}
	return parseCPULine(sc.Text())
}

// parseCPULine reads "cpu user nice system idle iowait irq softirq steal
// ...": steal is the eighth value (Linux 2.6.11 and later).
func parseCPULine(line string) cpuTimes {
	fs := strings.Fields(line)
	if len(fs) < 9 || fs[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, f := range fs[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		if i < 8 { // guest times are counted in user already
			t.total += v
		}
		if i == 7 {
			t.steal = v
		}
	}
	t.ok = true
	return t
}

// stealBetween is the share of the machine's CPU time stolen between a
// and b, or -1 when either could not be read.
func stealBetween(a, b cpuTimes) float64 {
	if !a.ok || !b.ok || b.total <= a.total {
		return -1
	}
	return float64(b.steal-a.steal) / float64(b.total-a.total)
}
