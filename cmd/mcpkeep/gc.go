package main

import (
	"context"
	"os"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"runtime/debug"
	"sync"
	"time"
)

// relayGCPercent is the collector's target for a serving proxy. A relay
// keeps little alive (a few MiB: its sessions, catalogs and buffers) and
// allocates a lot per request that dies at once (go-sdk v1.8.0 allocates
// about 380 KiB per relayed tool call, most of it a fresh 32 KiB decoder
// buffer per JSON value decoded). At the default 100 the heap goal stays
// near its 4 MiB floor and a collection runs every few calls, each taking
// a processor for its mark phase: the GC was a quarter of the proxy's CPU
// profile. At 400 the goal is five times the live heap (a 16 MiB floor),
// so collections are four times rarer for a few MiB more of resident
// memory.
const relayGCPercent = 400

// relayGC sets the collector for serving, unless the user set GOGC (the
// runtime has applied it already): GOMEMLIMIT, if set, still caps the heap.
func relayGC() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	debug.SetGCPercent(relayGCPercent)
}

// startHeapCap bounds the heap while the collector is paused for the
// start (pauseStartGC): past it the runtime collects anyway. It holds a
// warm start's burst (88 MB for 50 cached servers, gctrace's heap at the
// resume: most of it the SDK's 32 KiB decoder buffer, twice per tool) and
// not much more: a server that floods the proxy while it starts meets a
// collector that runs at 128 MiB (less in a small container: startCap)
// for at most startGCMax (TestHostilePeers bounds the whole run's
// memory). At 64 MiB the burst met the limit: two collections ran inside
// the registration again (docs/design.md §20 has the measurement).
const startHeapCap = 128 << 20

// startGCMax bounds the pause: a warm start settles in about 100 ms; a
// start that settles later (servers without a cache, waited for up to
// --init-wait, or peers that flood it) collects as usual from then on.
const startGCMax = time.Second

// pauseStartGC turns the collector off for the proxy's start, unless the
// user set GOGC or GOMEMLIMIT, and returns what turns it back on (once;
// later calls do nothing). The start allocates in one burst what it
// mostly drops at once: a warm start of 50 cached servers allocates
// about 90 MB (1,150 tools, each schema encoded and decoded twice by the
// SDK's AddTool) around a live heap of about 10 MB, and two or three
// collections ran inside it, their marking taking a core of two from the
// host's first answers (docs/design.md §20). Paused, the heap is capped by
// a memory limit of heapCap() (startCap: startHeapCap, less in a small
// container; read only when the pause applies); resumed, the collector's
// first cycle runs beside the answers to the host's initialize and first
// list (the front no longer waits for a list_changed first: docs/design.md
// §20, which gives the trial of holding it until the first complete list).
func pauseStartGC(heapCap func() int64) (resume func()) {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if gogc || limit {
		return func() {}
	}
	prevLimit := debug.SetMemoryLimit(heapCap())
	prevPercent := debug.SetGCPercent(-1)
	var once sync.Once
	return func() {
		once.Do(func() {
			debug.SetGCPercent(prevPercent)
			debug.SetMemoryLimit(prevLimit)
		})
	}
}

// warmStart reports whether the start will register cached catalogs in
// one burst, the only start the pause is for: every server of cfg has a
// cache entry. A cold start registers each server as it connects, and a
// peer flooding it meets the collector as usual.
func warmStart(c *catalogcache.Cache, cfg *config.Config) bool {
	if c == nil || cfg == nil {
		return false
	}
	names := make([]string, 0, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		names = append(names, sc.Name)
	}
	return c.Warm(names)
}

// resumeGCAfter calls resume once the first apply settled (applied
// closed), after startGCMax, or when ctx ends, whichever comes first; the
// returned wait returns once it has.
func resumeGCAfter(ctx context.Context, applied <-chan struct{}, resume func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(startGCMax)
		defer t.Stop()
		select {
		case <-applied:
		case <-t.C:
		case <-ctx.Done():
		}
		resume()
	}()
	return func() { <-done }
}
