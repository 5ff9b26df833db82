package main

import (
	"os"
	"runtime/debug"
	"testing"
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
