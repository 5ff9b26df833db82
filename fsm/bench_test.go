package fsm_test

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// BenchmarkFire fires a realistic cycle of one supervisor's life: connect,
// a tools change, a stable window, a crash, a backoff, a failed retry, a
// second backoff, then back to connecting. One op is one Fire.
func BenchmarkFire(b *testing.B) {
	cycle := []struct {
		ev fsm.Event
		f  fsm.Facts
	}{
		{fsm.Connected, fsm.Facts{}},
		{fsm.ToolsChanged, fsm.Facts{}},
		{fsm.Stable, fsm.Facts{}},
		{fsm.ToolsChanged, fsm.Facts{Stale: true}}, // dropped: stale gen
		{fsm.Closed, fsm.Facts{}},
		{fsm.Released, fsm.Facts{}},
		{fsm.RetryDue, fsm.Facts{}},
		{fsm.Failed, fsm.Facts{}},
		{fsm.Failed, fsm.Facts{Repeated: true}}, // dropped: second signal
		{fsm.Released, fsm.Facts{}},
		{fsm.RetryDue, fsm.Facts{}},
	}
	m := fsm.New()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := cycle[i]
		_, err := m.Fire(c.ev, c.f)
		if (err == nil) != (c.f == fsm.Facts{}) {
			b.Fatalf("step %d (%s in %s): %v", i, c.ev, m.State(), err)
		}
		if i++; i == len(cycle) {
			i = 0
		}
	}
}
