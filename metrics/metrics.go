package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Request results, the values of mcpkeep_requests_total's result label.
const (
	resultOK             = "ok"
	resultError          = "error"
	resultNotConnected   = "not_connected"
	resultConnectionLost = "connection_lost"
)

// Registry holds mcpkeep's Prometheus metrics (docs/design.md §16) on a
// registry of its own, with the Go and process collectors. It learns of
// transitions through its Observer (PoolOptions.Observer, or the proxy's
// Options.Pool.Observer) and of relayed requests through Request (it is a
// proxy.Metrics); state and catalog sizes it reads from the pool at
// scrape time. Prometheus stays out of the library packages: this
// package is the only one that imports it.
type Registry struct {
	log *slog.Logger
	reg *prometheus.Registry

	transitions *prometheus.CounterVec
	reconnects  *prometheus.CounterVec
	starts      *prometheus.CounterVec
	idleStops   *prometheus.CounterVec
	outage      *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec

	// pool is the source the scrape-time collector reads; set by Handler
	// (nil until then).
	pool atomic.Pointer[func() *mcpkeep.Pool]

	mu struct {
		sync.Mutex
		// down holds, per server in an outage, when it left established
		// (on the supervisor's clock).
		down map[string]time.Time
	}
}

// New returns a Registry whose metrics live on their own registry (with
// the Go and process collectors); log receives the metric handler's
// errors (nil discards).
func New(log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Registry{log: log, reg: prometheus.NewRegistry()}
	o.mu.down = map[string]time.Time{}
	o.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_transitions_total",
		Help: "Lifecycle transitions fired, by server, event and target state (internal ones included).",
	}, []string{"server", "event", "to"})
	o.reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_reconnects_total",
		Help: "Reconnection attempts started (retry_due or reconnect into connecting), by server.",
	}, []string{"server"})
	o.starts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_starts_total",
		Help: "Generations started, by server and cause (startup, demand, recovery), counted when their attempt settles.",
	}, []string{"server", "cause"})
	o.idleStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_idle_stops_total",
		Help: "Servers stopped for idleness (idle_timeout), by server.",
	}, []string{"server"})
	o.outage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpkeep_outage_seconds",
		Help:    "Outage durations: from leaving established to the next established, by server.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"server"})
	o.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_requests_total",
		Help: "Requests relayed to a server, by server, method and result (ok, error, not_connected, connection_lost).",
	}, []string{"server", "method", "result"})
	o.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpkeep_request_seconds",
		Help:    "Latency of the requests relayed to a server, by server and method.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"server", "method"})
	o.reg.MustRegister(o.transitions, o.reconnects, o.starts, o.idleStops, o.outage, o.requests, o.latency,
		poolCollector{o},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return o
}

// Observer is the Observer to subscribe (PoolOptions.Observer, combined
// with others by mcpkeep.Observers). It runs on the supervisors' goroutines and
// only counts: a short lock and atomic counters, never I/O.
func (o *Registry) Observer() mcpkeep.Observer {
	return func(t mcpkeep.Transition) {
		o.transitions.WithLabelValues(t.Server, t.Event.String(), t.To.String()).Inc()
		if t.To == fsm.Connecting && (t.Event == fsm.RetryDue || t.Event == fsm.Reconnect) {
			o.reconnects.WithLabelValues(t.Server).Inc()
		}
		if t.Cause != mcpkeep.StartNone {
			o.starts.WithLabelValues(t.Server, t.Cause.String()).Inc()
		}
		if t.Event == fsm.IdleTimeout {
			// An idle stop is not an outage: no outage is measured.
			o.idleStops.WithLabelValues(t.Server).Inc()
			return
		}
		var outage time.Duration
		measured := false
		o.mu.Lock()
		switch {
		case t.To == fsm.Established:
			if since, ok := o.mu.down[t.Server]; ok {
				delete(o.mu.down, t.Server)
				outage, measured = t.At.Sub(since), true
			}
		case t.From == fsm.Established && t.To == fsm.Lost:
			o.mu.down[t.Server] = t.At
		case t.To == fsm.Draining || t.To == fsm.Disposed:
			delete(o.mu.down, t.Server) // an outage that never ended
		}
		o.mu.Unlock()
		if measured {
			o.outage.WithLabelValues(t.Server).Observe(max(outage, 0).Seconds())
		}
	}
}

// Request records one request relayed to server (method is the MCP
// method: tools/call, prompts/get, resources/read...) that took took and
// ended with err.
func (o *Registry) Request(server, method string, took time.Duration, err error) {
	o.requests.WithLabelValues(server, method, Result(err)).Inc()
	o.latency.WithLabelValues(server, method).Observe(took.Seconds())
}

// Result classifies a relayed request's error: the value of
// mcpkeep_requests_total's result label.
func Result(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, mcpkeep.ErrConnectionLost):
		return resultConnectionLost
	case errors.Is(err, mcpkeep.ErrNotConnected):
		return resultNotConnected
	}
	return resultError
}

// CountDropped exports fn (proxy.Server.HostDropped) as
// mcpkeep_host_dropped_total.
func (o *Registry) CountDropped(fn func() uint64) {
	o.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpkeep_host_dropped_total",
		Help: "Log and progress messages dropped because a host session did not read (its outbox was full).",
	}, func() float64 { return float64(fn()) }))
}

// Handler serves the metrics in Prometheus text format. pool returns the
// pool, or nil before the servers started.
func (o *Registry) Handler(pool func() *mcpkeep.Pool) http.Handler {
	o.pool.Store(&pool)
	return promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{
		ErrorLog: promLogger{o.log},
		Registry: o.reg, // counts its own errors: promhttp_metric_handler_errors_total
	})
}

// poolCollector reads the per-server gauges from the pool at scrape time.
type poolCollector struct{ o *Registry }

var (
	stateDesc = prometheus.NewDesc("mcpkeep_server_state",
		"1 for the server's current lifecycle state, 0 for the others.", []string{"server", "state"}, nil)
	refusedDesc = prometheus.NewDesc("mcpkeep_items_refused_total",
		"Listed items left out because a host could not take them (a bad URI, template or schema), by server.", []string{"server"}, nil)
	catalogDesc = prometheus.NewDesc("mcpkeep_catalog_items",
		"Items the server's last good generation offers, by kind (tools, prompts, resources, templates).", []string{"server", "kind"}, nil)
	replayedDesc = prometheus.NewDesc("mcpkeep_calls_replayed_total",
		"Calls lost to the server's crash and sent once more on its next generation (readOnlyHint or idempotentHint tools), by server.", []string{"server"}, nil)
	heldDesc = prometheus.NewDesc("mcpkeep_calls_held_total",
		"Requests that waited for their server through an outage (waitForReadyMs) instead of failing at once, by server.", []string{"server"}, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- catalogDesc
	ch <- refusedDesc
	ch <- replayedDesc
	ch <- heldDesc
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.o.pool.Load()
	if src == nil {
		return
	}
	pool := (*src)()
	if pool == nil {
		return
	}
	for _, s := range pool.States() {
		if sup, ok := pool.Supervisor(s.Server); ok {
			ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(sup.Stats().Refused), s.Server)
		}
		for _, st := range fsm.States {
			v := 0.0
			if st == s.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s.Server, st.String())
		}
		for _, k := range []struct {
			kind string
			n    int
		}{{"tools", s.Tools}, {"prompts", s.Prompts}, {"resources", s.Resources}, {"templates", s.Templates}} {
			ch <- prometheus.MustNewConstMetric(catalogDesc, prometheus.GaugeValue, float64(k.n), s.Server, k.kind)
		}
		if sup, ok := pool.Supervisor(s.Server); ok {
			ch <- prometheus.MustNewConstMetric(replayedDesc, prometheus.CounterValue, float64(sup.CallsReplayed()), s.Server)
			ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.CounterValue, float64(sup.CallsHeld()), s.Server)
		}
	}
}

// promLogger passes promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("metrics", slog.String("err", strings.TrimSuffix(fmt.Sprintln(v...), "\n")))
}
