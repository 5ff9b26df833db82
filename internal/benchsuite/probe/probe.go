// Package probe lets the benchmark suite look into a process it started:
// when the environment variable Env names a file, Start serves, on a
// loopback port written to that file, the process's counters (/stats:
// runtime.MemStats Mallocs and TotalAlloc, the counters testing's
// allocs/op uses, and the process's user + system CPU time in ns) and
// net/http/pprof (/debug/pprof/).
//
// The suite adds it to `mcpkeep proxy` at build time (go build -overlay
// adds a file to package main whose init calls Start), so the proxy's own
// sources stay as they are, and calls it in the fixture processes it
// re-executes. Without Env set, Start does nothing.
package probe

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
)

// Env names the file Start writes its address to.
const Env = "MCPKEEP_BENCH_PROBE"

// Start serves the probe when Env is set; see the package documentation.
func Start() {
	path := os.Getenv(Env)
	if path == "" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Fprintf(w, "%d %d %d\n", m.Mallocs, m.TotalAlloc, ru.Utime.Nano()+ru.Stime.Nano())
	})
	// /gc collects and returns the freed memory to the OS, so that the
	// resident set measured next is the live one.
	mux.HandleFunc("/gc", func(w http.ResponseWriter, _ *http.Request) {
		debug.FreeOSMemory()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go http.Serve(ln, mux) //nolint:errcheck // lives as long as the process
	// Written whole, then renamed: a reader never sees half an address.
	if err := os.WriteFile(path+".tmp", []byte(ln.Addr().String()), 0o644); err == nil {
		_ = os.Rename(path+".tmp", path)
	}
}
