package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpkeep/mcpkeep/tasks"
)

// CountTasks exports fn (proxy.Server.Tasks: the tasks kept, working and
// finished, and the relayed ones by the state their server last gave, by
// state; docs/design.md §25) as mcpkeep_tasks{state}. A nil
// map (no task engine) exports zeros.
func (o *Registry) CountTasks(fn func() map[tasks.State]int) {
	o.reg.MustRegister(&taskCollector{fn: fn, desc: prometheus.NewDesc("mcpkeep_tasks",
		"Tasks of the tasks extension kept or relayed by mcpkeep, by state (working and input_required run; the others are kept until their TTL; a relayed task's state is the one its server last gave).",
		[]string{"state"}, nil)})
}

type taskCollector struct {
	fn   func() map[tasks.State]int
	desc *prometheus.Desc
}

func (c *taskCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reads the counts once per scrape, so the states add up.
func (c *taskCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	for _, s := range tasks.States {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), s.String())
	}
}
