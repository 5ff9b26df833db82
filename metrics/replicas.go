package metrics

import "github.com/prometheus/client_golang/prometheus"

// ReplicaFuncs read a replica's state for /metrics (docs/design.md §26).
type ReplicaFuncs struct {
	Forwarded, OwnerGone, LoopRefused func() uint64 // proxy.ReplicaCounts
	StoreLost                         func() bool   // replica.Member.Degraded
	StoreLosses                       func() uint64 // replica.Member.Losses
	Members                           func() int    // replica.Member.Count
}

// CountReplicas exports f: mcpkeep_replica_forwarded_total,
// mcpkeep_replica_owner_gone_total, mcpkeep_replica_loop_refused_total,
// mcpkeep_store_lost (1 while the store is lost: own handles only),
// mcpkeep_store_losses_total and mcpkeep_replica_members.
func (o *Registry) CountReplicas(f ReplicaFuncs) {
	counter := func(name, help string, fn func() uint64) {
		o.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(fn()) }))
	}
	counter("mcpkeep_replica_forwarded_total", "Requests forwarded to the replica that owns their handle.", f.Forwarded)
	counter("mcpkeep_replica_owner_gone_total", "Requests for a handle whose owning replica is gone, answered with the spec's answer (404, -32602).", f.OwnerGone)
	counter("mcpkeep_replica_loop_refused_total", "Forwarded requests for a handle this replica does not own, not forwarded again.", f.LoopRefused)
	counter("mcpkeep_store_losses_total", "Times the store was lost after the start.", f.StoreLosses)
	o.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpkeep_store_lost",
		Help: "1 while the store cannot be reached: this replica serves its own handles only."},
		func() float64 {
			if f.StoreLost() {
				return 1
			}
			return 0
		}))
	o.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpkeep_replica_members",
		Help: "Live replicas in the membership set at the last refresh, this one included."},
		func() float64 { return float64(f.Members()) }))
}
