package trace_test

import (
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/trace"
)

// Traces of lazy start and idle stop check (docs/design.md §20): a server
// that starts idle (gen 0 until its first demand), an idle stop that
// releases into idle with the budget untouched, and a demand that starts
// the next generation.
func TestCheckIdle(t *testing.T) {
	lazy := join(hdr,
		ev(0, 1, "demand", "idle", "connecting", 0, ""),
		ev(20, 1, "connected", "connecting", "established", 0, ""),
		ev(600020, 1, "idle_timeout", "established", "lost", 0, ""),
		ev(600030, 1, "released", "lost", "idle", 0, `,"detail":{"guard":"stopping for idle"}`),
		ev(700000, 2, "demand", "idle", "connecting", 0, ""),
		ev(700020, 2, "connected", "connecting", "established", 0, ""),
		ev(800000, 2, "dispose", "established", "draining", 0, ""),
		ev(800000, 2, "drained", "draining", "disposed", 0, ""))
	if err := trace.Check(strings.NewReader(lazy)); err != nil {
		t.Fatal(err)
	}
	// A lazy server never demanded: gen 0 throughout.
	never := join(hdr,
		ev(5, 0, "dispose", "idle", "draining", 0, ""),
		ev(5, 0, "drained", "draining", "disposed", 0, ""))
	if err := trace.Check(strings.NewReader(never)); err != nil {
		t.Fatal(err)
	}
	// An idle stop spends no retry: an attempt count that grows is wrong.
	bad := strings.Replace(lazy, `"event":"released","from":"lost","to":"idle","attempt":0`, `"event":"released","from":"lost","to":"idle","attempt":1`, 1)
	if err := trace.Check(strings.NewReader(bad)); err == nil {
		t.Fatal("an idle stop that spent a retry was accepted")
	}
}
