package mcpkeep

import (
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// Start returns with the snapshot of what its first attempt settled on
// already published: Pool.Apply returns after Start, and its caller (a
// test, a proxy's /readyz right after a reload) reads State at once.
// Before, the loop reported the activation of a lazy server listed from
// its cache, and of an eager one Start need not wait for, before its first
// publish, so State could still read New's snapshot (connecting, not
// cached): TestIdleServerReload failed so under -race. The hook reads the
// snapshot at the moment Start is told, which is the latest Start's
// caller can read it, so the ordering is checked without a race.
func TestStartReturnsWithItsSnapshotPublished(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*Options)
		ok   func(Snapshot) bool
	}{
		{"lazy cached", lazyCached, func(s Snapshot) bool {
			return s.State == fsm.Idle && s.Cached && s.Lazy && s.Started
		}},
		{"eager cached", func(o *Options) { o.Cache = &memStore{e: memEntry("echo", "hang")} }, func(s Snapshot) bool {
			return s.State == fsm.Connecting && s.Cached && s.Gen == 1 && s.Started
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.opts)
				var seen []Snapshot
				h.sup.testHooks = &testHooks{activated: func() { seen = append(seen, h.sup.State()) }}
				if err := h.start(); err != nil {
					t.Fatal(err)
				}
				if len(seen) != 1 {
					t.Fatalf("activation reported %d times, want once", len(seen))
				}
				if !tc.ok(seen[0]) {
					t.Fatalf("Start was told while State read %+v", seen[0])
				}
				if err := h.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
