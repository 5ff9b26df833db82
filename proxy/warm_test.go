package proxy

import "testing"

// Warm must take its samples the whole way: a sample the fast path
// refuses stops before the codecs after it are built.
func TestWarmTakesEverySample(t *testing.T) {
	if err := Warm(); err != nil {
		t.Fatal(err)
	}
}
