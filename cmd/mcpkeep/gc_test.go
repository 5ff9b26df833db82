package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
)

// Serving sets the relay's GC target unless the user chose one with GOGC.
func TestRelayGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "150")
	relayGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d; want it left at 100", got)
	}

	t.Setenv("GOGC", "")
	relayGC() // GOGC set, though empty: the user's (the runtime's default)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC= set empty: GC percent %d; want it left at 100", got)
	}
}

func TestRelayGCUnset(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	t.Setenv("GOGC", "x") // registers the restore of the original value
	unsetenv(t, "GOGC")
	relayGC()
	if got := debug.SetGCPercent(100); got != relayGCPercent {
		t.Errorf("GC percent %d after relayGC; want %d", got, relayGCPercent)
	}
}

// unsetenv removes key for the rest of the test; an earlier t.Setenv of
// it restores the original value after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// The collector is off during the proxy's start, the heap capped by a
// memory limit, and back as before once the start settled.
func TestStartGCPausedUntilApplied(t *testing.T) {
	prevPercent := debug.SetGCPercent(relayGCPercent)
	defer debug.SetGCPercent(prevPercent)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prevLimit)
	t.Setenv("GOGC", "x")
	unsetenv(t, "GOGC")
	t.Setenv("GOMEMLIMIT", "x")
	unsetenv(t, "GOMEMLIMIT")

	resume := pauseStartGC(func() int64 { return startHeapCap })
	if got := gcPercent(); got != -1 {
		t.Errorf("during the start: GC percent %d, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != startHeapCap {
		t.Errorf("during the start: memory limit %d, want %d", got, startHeapCap)
	}
	applied := make(chan struct{})
	wait := resumeGCAfter(context.Background(), applied, resume)
	close(applied)
	wait()
	if got := gcPercent(); got != relayGCPercent {
		t.Errorf("after the start: GC percent %d, want %d", got, relayGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("after the start: memory limit %d, want none", got)
	}
	resume() // a second resume changes nothing
	if got := gcPercent(); got != relayGCPercent {
		t.Errorf("after a second resume: GC percent %d, want %d", got, relayGCPercent)
	}
}

// A user's GOGC or GOMEMLIMIT is theirs: the start does not pause the
// collector.
func TestStartGCLeavesTheUsersSettings(t *testing.T) {
	prevPercent := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prevPercent)
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "x")
			unsetenv(t, "GOGC")
			t.Setenv("GOMEMLIMIT", "x")
			unsetenv(t, "GOMEMLIMIT")
			t.Setenv(env, "")
			resume := pauseStartGC(func() int64 { return startHeapCap })
			defer resume()
			if got := gcPercent(); got != 150 {
				t.Errorf("with %s set: GC percent %d, want it left at 150", env, got)
			}
		})
	}
}

// The pause ends with the serving context too.
func TestStartGCResumedWhenServingEnds(t *testing.T) {
	resumed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	wait := resumeGCAfter(ctx, nil, func() { close(resumed) })
	cancel()
	wait()
	select {
	case <-resumed:
	default:
		t.Fatal("not resumed when the context ended")
	}
}

// gcPercent reads the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Only a warm start pauses: without an entry for every server (or
// without a cache) the collector runs as usual from the config on.
func TestWarmStart(t *testing.T) {
	dir := t.TempDir()
	c := catalogcache.New(dir)
	cfg := &config.Config{Servers: []config.Server{{Name: "a"}, {Name: "b"}}}
	if warmStart(nil, cfg) || warmStart(c, nil) || warmStart(c, cfg) {
		t.Fatal("a start without a cache, a config or any entry is warm")
	}
	entry := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name+".0123456789abcdef.v2.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry("a")
	if warmStart(c, cfg) {
		t.Error("warm with one of two servers cached")
	}
	entry("b")
	if !warmStart(c, cfg) {
		t.Error("cold with every server cached")
	}
}
