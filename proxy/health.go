package proxy

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// Health is a serving mcpkeep's liveness and readiness (docs/design.md
// §16). It learns which servers were ever established through its
// Observer (subscribe it before the servers start; a Server does) and
// reads everything else from the pool when asked.
type Health struct {
	mu struct {
		sync.Mutex
		// established names the servers that reached established at
		// least once (per name: a supervisor replaced by a reload
		// inherits its predecessor's record).
		established map[string]bool
		// expected, when set, names the servers the config enables:
		// readiness also waits for the ones not (yet) in the pool.
		expected []string
		stopping bool
	}
	// ui feeds the live page (ui_hub.go, docs/design.md §28).
	ui *uiHub
	// twins lists the era twins (twin.go, docs/design.md §24): shown,
	// never deciding the process's readiness. nil: none.
	twins func() []mcpkeep.Snapshot
	// tasks counts the proxy's tasks for /readyz (set once by New).
	tasks func() map[string]int
}

// NewHealth returns a Health that has seen nothing yet.
func NewHealth() *Health {
	h := &Health{ui: newUIHub()}
	h.mu.established = map[string]bool{}
	return h
}

// Observer records establishments, and feeds the live page. It runs on the supervisors' loops and
// only takes a short lock.
func (h *Health) Observer() mcpkeep.Observer {
	return func(t mcpkeep.Transition) {
		h.ui.observe(t)
		if t.To != fsm.Established {
			return
		}
		h.mu.Lock()
		h.mu.established[t.Server] = true
		h.mu.Unlock()
	}
}

// Expect names the servers the applied config enables; readiness then
// also reports the ones the pool does not run (yet), such as a server
// whose transport could not be built.
func (h *Health) Expect(names []string) {
	h.mu.Lock()
	h.mu.expected = slices.Clone(names)
	h.mu.Unlock()
}

// Stop marks the process as shutting down: not ready from now on, so a
// load balancer stops routing to it, while still alive.
func (h *Health) Stop() {
	h.mu.Lock()
	h.mu.stopping = true
	h.mu.Unlock()
	h.ui.stop()
}

// Readiness is the body of /readyz; `mcpkeep status` reads it.
type Readiness struct {
	Ready bool `json:"ready"`
	// Reason says why not ready ("" when ready).
	Reason  string         `json:"reason,omitempty"`
	Servers []ServerStatus `json:"servers"`
	// Tasks counts the tasks kept, by state (docs/design.md §25); absent
	// when the proxy keeps none.
	Tasks map[string]int `json:"tasks,omitempty"`
}

// ServerStatus is one server's line of /readyz, from its Snapshot.
type ServerStatus struct {
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
	// Start is the start mode: "eager" or "lazy" (docs/design.md §20).
	Start string `json:"start"`
	// Cached: the lists shown are the catalog cache's, not yet
	// confirmed by a live connection.
	Cached bool `json:"cached,omitempty"`
	// Ready is this server's own readiness, and NotReady why not: a lazy
	// server's trouble is reported here and does not take the process's
	// readiness away (docs/design.md §20).
	Ready    bool   `json:"ready"`
	NotReady string `json:"notReady,omitempty"`
}

// startMode is a server's start mode as the config writes it.
func startMode(lazy bool) string {
	if lazy {
		return "lazy"
	}
	return "eager"
}

// Readiness: ready when the servers started (pool not nil), every eager
// one has been established once and none is exhausted, draining or
// disposed, every expected server runs, and the process is not stopping.
// Each server's own readiness is on its line; a lazy server's does not
// decide the process's (it is ready while idle, and its demand start's
// trouble is its own).
func (h *Health) Readiness(pool *mcpkeep.Pool) Readiness {
	rep := Readiness{Servers: []ServerStatus{}}
	var why []string
	var snaps []mcpkeep.Snapshot
	if pool == nil {
		why = append(why, "no host has connected yet: the servers start at its initialize")
	} else {
		snaps = pool.States()
	}
	primaries := len(snaps)
	if h.twins != nil {
		snaps = append(snaps, h.twins()...)
	}
	h.mu.Lock()
	stopping, expected := h.mu.stopping, h.mu.expected
	established := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		established[s.Server] = h.mu.established[s.Server]
	}
	h.mu.Unlock()
	if stopping {
		why = append([]string{"shutting down"}, why...)
	}
	running := map[string]bool{}
	for i, s := range snaps {
		running[s.Server] = true
		st := ServerStatus{Server: s.Server, State: s.State.String(), Attempt: s.Attempt, MaxAttempts: s.MaxAttempts,
			Tools: s.Tools, Prompts: s.Prompts, Resources: s.Resources, Templates: s.Templates,
			Start: startMode(s.Lazy), Cached: s.Cached}
		if !s.NextRetry.IsZero() {
			st.NextRetry = s.NextRetry.UTC().Format(time.RFC3339)
		}
		if s.LastErr != nil {
			st.LastError = s.LastErr.Error()
		}
		var not string
		switch {
		case s.State == fsm.Exhausted:
			not = fmt.Sprintf("%s is exhausted", s.Server)
		case s.State == fsm.Draining || s.State == fsm.Disposed:
			not = fmt.Sprintf("%s is %s", s.Server, s.State)
		case s.State == fsm.Idle:
			// Idle is a server at rest, its catalog listed: the next
			// request starts it (docs/design.md §20).
		case !established[s.Server] && s.State != fsm.Established:
			not = fmt.Sprintf("%s has not been established yet (%s)", s.Server, s.State)
		}
		st.Ready, st.NotReady = not == "", not
		rep.Servers = append(rep.Servers, st)
		if i >= primaries {
			continue // a twin: started by a host's call, its trouble its own (§24)
		}
		// A lazy server listed from its cache (or once established) was
		// ready while idle and is started by a request: its start failing
		// (or still under way) is that server's fault, reported on its
		// line, and must not make the process not ready for the others'
		// sake (docs/design.md §20). A lazy server with no catalog yet is
		// waited for like an eager one.
		if own := s.Lazy && (s.Cached || established[s.Server]); not != "" && !own {
			why = append(why, not)
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

// Handler serves GET /healthz (200 while the process serves) and GET
// /readyz (200 or 503, with Readiness as JSON). pool returns the pool, or
// nil before the servers started.
//
// The probes need no token, so they guard what they show
// (docs/design.md §19): on a loopback listener a request whose Host is
// not loopback is refused (a DNS-rebinding page cannot read them); on any
// other listener the error texts are left out unless the request carries
// token.
func (h *Health) Handler(pool func() *mcpkeep.Pool, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rep := h.Readiness(pool())
		if h.tasks != nil {
			rep.Tasks = h.tasks()
		}
		if !localRequest(r) && !carriesToken(r, token) {
			for i := range rep.Servers {
				rep.Servers[i].LastError = ""
			}
		}
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
	return rebindGuard(mux)
}

// rebindGuard refuses a request that reached a loopback listener under a
// Host that is not loopback.
func rebindGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if localRequest(r) && !loopbackHost(r.Host) {
			http.Error(w, "forbidden: the Host is not loopback", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localRequest reports whether r reached a loopback listener.
func localRequest(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return IsLoopback(strings.Trim(host, "[]"))
}

// IsLoopback reports whether host (a name or an IP, no port) is this
// machine: "localhost" or a loopback address. Off loopback the proxy
// wants a token (docs/design.md §16).
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
