package main

import (
	"os"
	"runtime/debug"
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
