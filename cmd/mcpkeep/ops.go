package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
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

// defaultOpsAddr is where `mcpkeep status` looks for a running instance
// when --addr is not given: the address to pass to --metrics-listen (or
// --listen) for status to find it without flags.
const defaultOpsAddr = "127.0.0.1:8731"

// Request results, the values of mcpkeep_requests_total's result label.
const (
	resultOK             = "ok"
	resultError          = "error"
	resultNotConnected   = "not_connected"
	resultConnectionLost = "connection_lost"
)

// ops is the operations side of a serving mcpkeep (docs/design.md §16): liveness,
// readiness and Prometheus metrics. It learns of transitions through its
// observer (subscribe it with PoolOptions.Observer) and of relayed
// requests through observeRequest; everything else (state, attempt,
// catalog sizes) it reads from the pool at scrape time. Prometheus stays
// in cmd/mcpkeep: the library only offers observers and snapshots.
type ops struct {
	log *slog.Logger
	reg *prometheus.Registry

	transitions *prometheus.CounterVec
	reconnects  *prometheus.CounterVec
	outage      *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec

	// pool is the source the scrape-time collector and /readyz read; set
	// by handler (nil until then).
	pool atomic.Pointer[func() *mcpkeep.Pool]

	mu struct {
		sync.Mutex
		// established names the servers that reached established at
		// least once (per name: a supervisor replaced by a reload
		// inherits its predecessor's).
		established map[string]bool
		// down holds, per server in an outage, when it left established
		// (on the supervisor's clock).
		down map[string]time.Time
		// expected, when set, names the servers the config enables:
		// /readyz also waits for the ones not (yet) in the pool.
		expected []string
		// stopping: the process is shutting down; /readyz answers 503.
		stopping bool
	}
}

// newOps returns an ops whose metrics live on their own registry (with the
// Go and process collectors); log receives the metric handler's errors
// (nil discards).
func newOps(log *slog.Logger) *ops {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &ops{log: log, reg: prometheus.NewRegistry()}
	o.mu.established = map[string]bool{}
	o.mu.down = map[string]time.Time{}
	o.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_transitions_total",
		Help: "Lifecycle transitions fired, by server, event and target state (internal ones included).",
	}, []string{"server", "event", "to"})
	o.reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpkeep_reconnects_total",
		Help: "Reconnection attempts started (retry_due or reconnect into connecting), by server.",
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
	o.reg.MustRegister(o.transitions, o.reconnects, o.outage, o.requests, o.latency,
		poolCollector{o},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return o
}

// observer is the Observer to subscribe (PoolOptions.Observer, combined
// with others by observers). It runs on the supervisors' goroutines and
// only counts: a short lock and atomic counters, never I/O.
func (o *ops) observer() mcpkeep.Observer {
	return func(t mcpkeep.Transition) {
		o.transitions.WithLabelValues(t.Server, t.Event.String(), t.To.String()).Inc()
		if t.To == fsm.Connecting && (t.Event == fsm.RetryDue || t.Event == fsm.Reconnect) {
			o.reconnects.WithLabelValues(t.Server).Inc()
		}
		var outage time.Duration
		measured := false
		o.mu.Lock()
		switch {
		case t.To == fsm.Established:
			o.mu.established[t.Server] = true
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

// observers combines observers into one, in order, skipping nil ones (a
// proxy without --trace has no trace observer).
func observers(list ...mcpkeep.Observer) mcpkeep.Observer {
	list = slices.DeleteFunc(list, func(fn mcpkeep.Observer) bool { return fn == nil })
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return func(t mcpkeep.Transition) {
		for _, fn := range list {
			fn(t)
		}
	}
}

// observeRequest records one request relayed to server (method is the MCP
// method: tools/call, prompts/get, resources/read...) that started at
// start and ended with err.
func (o *ops) observeRequest(server, method string, start time.Time, err error) {
	if o == nil {
		return
	}
	o.requests.WithLabelValues(server, method, requestResult(err)).Inc()
	o.latency.WithLabelValues(server, method).Observe(time.Since(start).Seconds())
}

// requestResult classifies a relayed request's error.
func requestResult(err error) string {
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

// expect names the servers the applied config enables (call it with the
// config's server names at start and after every reload): /readyz then
// also reports the ones the pool does not run (yet), such as a server
// whose transport could not be built. Without it /readyz judges the
// servers the pool runs.
func (o *ops) expect(names []string) {
	o.mu.Lock()
	o.mu.expected = slices.Clone(names)
	o.mu.Unlock()
}

// stop marks the process as shutting down: /readyz answers 503 from now
// on (so a load balancer stops routing to it) while /healthz stays 200.
func (o *ops) stop() {
	o.mu.Lock()
	o.mu.stopping = true
	o.mu.Unlock()
}

// handler serves /healthz, /readyz and /metrics. pool returns the pool,
// or nil before the host connected (the pool starts at its initialize).
func (o *ops) handler(pool func() *mcpkeep.Pool) http.Handler {
	o.pool.Store(&pool)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rep := o.readiness(pool())
		body, err := json.Marshal(rep)
		if err != nil { // cannot happen: strings, ints and bools
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if rep.Ready {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write(append(body, '\n'))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{
		ErrorLog: promLogger{o.log},
		Registry: o.reg, // counts its own errors: promhttp_metric_handler_errors_total
	}))
	return mux
}

// readyReply is the body of /readyz; `mcpkeep status` reads it.
type readyReply struct {
	Ready bool `json:"ready"`
	// Reason says why not ready ("" when ready).
	Reason  string         `json:"reason,omitempty"`
	Servers []serverStatus `json:"servers"`
}

// serverStatus is one server's line of /readyz, from its Snapshot.
type serverStatus struct {
	Server      string `json:"server"`
	State       string `json:"state"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts"`
	NextRetry   string `json:"nextRetry,omitempty"` // RFC 3339, only while backing-off
	LastError   string `json:"lastError"`
	Tools       int    `json:"tools"`
	Prompts     int    `json:"prompts"`
	Resources   int    `json:"resources"`
	Templates   int    `json:"templates"`
}

// readiness: ready when every server has been established once and none
// is exhausted (nor draining or disposed), the host has connected (pool
// not nil), every expected server runs and the process is not stopping.
func (o *ops) readiness(pool *mcpkeep.Pool) readyReply {
	rep := readyReply{Servers: []serverStatus{}}
	var why []string
	var snaps []mcpkeep.Snapshot
	if pool == nil {
		why = append(why, "no host has connected yet: the servers start at its initialize")
	} else {
		snaps = pool.States()
	}
	o.mu.Lock()
	stopping, expected := o.mu.stopping, o.mu.expected
	established := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		established[s.Server] = o.mu.established[s.Server]
	}
	o.mu.Unlock()
	if stopping {
		why = append([]string{"shutting down"}, why...)
	}
	running := map[string]bool{}
	for _, s := range snaps {
		running[s.Server] = true
		st := serverStatus{Server: s.Server, State: s.State.String(), Attempt: s.Attempt, MaxAttempts: s.MaxAttempts,
			Tools: s.Tools, Prompts: s.Prompts, Resources: s.Resources, Templates: s.Templates}
		if !s.NextRetry.IsZero() {
			st.NextRetry = s.NextRetry.UTC().Format(time.RFC3339)
		}
		if s.LastErr != nil {
			st.LastError = s.LastErr.Error()
		}
		rep.Servers = append(rep.Servers, st)
		switch {
		case s.State == fsm.Exhausted:
			why = append(why, fmt.Sprintf("%s is exhausted", s.Server))
		case s.State == fsm.Draining || s.State == fsm.Disposed:
			why = append(why, fmt.Sprintf("%s is %s", s.Server, s.State))
		case !established[s.Server] && s.State != fsm.Established:
			why = append(why, fmt.Sprintf("%s has not been established yet (%s)", s.Server, s.State))
		}
	}
	if pool != nil {
		for _, name := range expected {
			if !running[name] {
				why = append(why, fmt.Sprintf("%s is not running", name))
			}
		}
	}
	rep.Ready = len(why) == 0
	rep.Reason = strings.Join(why, "; ")
	return rep
}

// poolCollector reads the per-server gauges from the pool at scrape time.
type poolCollector struct{ o *ops }

var (
	stateDesc = prometheus.NewDesc("mcpkeep_server_state",
		"1 for the server's current lifecycle state, 0 for the others.", []string{"server", "state"}, nil)
	catalogDesc = prometheus.NewDesc("mcpkeep_catalog_items",
		"Items the server's last good generation offers, by kind (tools, prompts, resources, templates).", []string{"server", "kind"}, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- catalogDesc
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
	}
}

// promLogger passes promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("metrics", slog.String("err", strings.TrimSuffix(fmt.Sprintln(v...), "\n")))
}
