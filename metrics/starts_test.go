package metrics

import (
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// Starts are counted by cause, idle stops by server, and an idle stop is
// no outage.
func TestStartsAndIdleStops(t *testing.T) {
	o := New(nil)
	obs := o.Observer()
	at := time.Unix(0, 0)
	for _, tr := range []mcpkeep.Transition{
		{Server: "a", From: fsm.Connecting, To: fsm.Established, Event: fsm.Connected, Cause: mcpkeep.StartStartup, At: at},
		{Server: "a", From: fsm.Established, To: fsm.Lost, Event: fsm.IdleTimeout, At: at},
		{Server: "a", From: fsm.Lost, To: fsm.Idle, Event: fsm.Released, At: at},
		{Server: "a", From: fsm.Idle, To: fsm.Connecting, Event: fsm.Demand, At: at},
		{Server: "a", From: fsm.Connecting, To: fsm.Established, Event: fsm.Connected, Cause: mcpkeep.StartDemand, At: at.Add(time.Hour)},
		{Server: "a", From: fsm.Established, To: fsm.Lost, Event: fsm.Closed, At: at},
		{Server: "a", From: fsm.Connecting, To: fsm.Lost, Event: fsm.Failed, Cause: mcpkeep.StartRecovery, At: at},
	} {
		obs(tr)
	}
	got := map[string]float64{}
	families, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" {
					key += "/" + l.GetValue()
				}
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{"mcpkeep_starts_total/startup": 1, "mcpkeep_starts_total/demand": 1,
		"mcpkeep_starts_total/recovery": 1, "mcpkeep_idle_stops_total": 1} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if n := got["mcpkeep_outage_seconds"]; n != 0 {
		t.Errorf("an idle stop was measured as an outage (%v samples)", n)
	}
}
