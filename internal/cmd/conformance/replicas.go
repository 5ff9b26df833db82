package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The replicas column (docs/design.md §24, §26): the suite talks to
// haproxy (round robin per request, no affinity, http-no-delay:
// replicatest's) in front of three `mcpkeep run --listen --store` replicas
// sharing a redis-server and a state key, each with the go-sdk's
// everything-server as its stdio child. It is held to the "run (stdio)"
// column, one such process alone: a scenario that passes through one
// replica and fails through three is a forwarding bug. `run`, not
// `proxy`: it is the single-process column with the same server and
// names (proxy's prefixed names need the shim, which would sit in front
// of haproxy and hide nothing the replicas do), and both commands serve
// through the same proxy.Server and replica dispatcher.

// replicaCount is how many replicas stand behind haproxy.
const replicaCount = 3

// The -replicas modes.
const (
	replicasAuto = "auto" // the column when redis-server and haproxy are on PATH
	replicasOn   = "on"   // the column, or a failure naming what is missing
	replicasOff  = "off"  // no column
	// The column with forwarding off (--replica-no-forward): what
	// forwarding prevents; it is expected to fail.
	replicasControl = "control"
)

// The column's id in mustpass.txt, and its name in the tables.
const (
	replicasColumnID   = "replicas"
	replicasColumnName = "run ×3, haproxy"
)

// replicasWanted decides, for mode and what is on PATH (lookPath), whether
// the replicas column runs; err says what is missing when mode (or
// require, MCPKEEP_REQUIRE_REPLICAS=1) demands it, note when auto leaves
// it out.
func replicasWanted(mode string, require bool, lookPath func(string) (string, error)) (run bool, note string, err error) {
	switch mode {
	case replicasOff:
		return false, "", nil
	case replicasAuto, replicasOn, replicasControl:
	default:
		return false, "", fmt.Errorf("-replicas %q: want %s, %s, %s or %s", mode, replicasAuto, replicasOn, replicasOff, replicasControl)
	}
	var missing []string
	for _, p := range []string{"redis-server", "haproxy"} {
		if _, err := lookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return true, "", nil
	}
	what := fmt.Sprintf("%s not on PATH (apt-get install -y %s)", strings.Join(missing, " and "), strings.Join(missing, " "))
	if mode != replicasAuto || require {
		why := "-replicas " + mode
		if mode == replicasAuto {
			why = replicatest.RequireEnv + "=1"
		}
		return false, "", fmt.Errorf("the replicas column (%s): %s", why, what)
	}
	return false, "the replicas column is not run: " + what, nil
}

// replicas starts redis-server, three replicas and haproxy in front of
// them, and returns haproxy's MCP URL.
func (h *harness) replicas(ctx context.Context, dir string) (string, func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (string, func(), error) {
		stopAll()
		return "", nil, err
	}
	// No other column picks a port until every part listens
	// (replicatest's parts pick theirs as freePort does).
	h.bindMu.Lock()
	defer h.bindMu.Unlock()
	rdir := filepath.Join(dir, "redis")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return fail(err)
	}
	rs, err := replicatest.LaunchRedis(rdir)
	if err != nil {
		return fail(fmt.Errorf("redis-server: %w", err))
	}
	stops = append(stops, rs.Kill)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyPath := filepath.Join(dir, "state.key")
	if err := os.WriteFile(keyPath, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return fail(err)
	}
	var backends []string
	for i := range replicaCount {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		addr := net.JoinHostPort("127.0.0.1", port)
		id := fmt.Sprintf("r%d", i)
		argv := []string{h.mcpkeep, "run", "--listen", addr, "--store", rs.URL(), "--replica-id", id,
			"--state-key-file", keyPath, "--log-format", "json", "--log-level", "debug"}
		if h.replicasControl {
			argv = append(argv, "--replica-no-forward")
		}
		argv = append(argv, "--eras", "twin", "--", h.server) // as run (stdio), the column it is held to
		p, err := startUntil(ctx, "mcpkeep run --store (replica "+id+")", filepath.Join(dir, "mcpkeep-"+id+".log"), argv, replicaJoined)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, p.stop)
		backends = append(backends, addr)
	}
	for _, addr := range backends {
		if err := primeReplica(ctx, addr); err != nil {
			return fail(err)
		}
	}
	// Stops run last first: the counts before the replicas stop.
	stops = append(stops, func() { h.countForwards(backends) })
	lb, err := replicatest.LaunchHAProxy(dir, backends)
	if err != nil {
		return fail(fmt.Errorf("haproxy: %w", err))
	}
	stops = append(stops, lb.Kill)
	return "http://" + lb.Addr + "/mcp", stopAll, nil
}

// countForwards reads each replica's dispatcher counts from its
// /metrics, prints their sums, and records a failure when none was
// forwarded: round robin over three replicas sends most of a legacy
// session's requests, and a continuation, to a replica that does not own
// them, so a column where nothing was forwarded tested no forwarding
// (one backend up, or the dispatcher off). It runs before the replicas
// stop, after every set's runs.
func (h *harness) countForwards(backends []string) {
	var sum replicaCounts
	var errs []error
	for _, addr := range backends {
		c, err := scrapeReplica(addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sum.Forwarded += c.Forwarded
		sum.OwnerGone += c.OwnerGone
		sum.LoopRefused += c.LoopRefused
	}
	fmt.Printf("conformance: %s: %d requests forwarded to the replica that owns their handle, %d answered for a gone owner, %d loops refused\n",
		h.replicasName(), sum.Forwarded, sum.OwnerGone, sum.LoopRefused)
	h.replicasErr = forwardVerdict(sum, errs, h.replicasControl)
}

// errNothingForwarded: the replicas column ran and no replica forwarded
// a request.
var errNothingForwarded = errors.New("no request was forwarded: the column tested no forwarding")

// forwardVerdict is the column's verdict on its counts: the errors
// reading them, or errNothingForwarded (none with forwarding off, the
// control run).
func forwardVerdict(sum replicaCounts, errs []error, control bool) error {
	if len(errs) == 0 && sum.Forwarded == 0 && !control {
		return errNothingForwarded
	}
	return errors.Join(errs...)
}

// primeTools are the everything-server's hooks that add a transient
// tool and prompt to the one server process that runs them (a list
// change, for the subscription checks). The suite calls them in
// server-stateless, through haproxy: on one or two of the three
// replicas' servers, which then list a tool the others lack, and
// http-header-validation, which calls the first tool of a tools/list,
// fails when the list came from one and the call went to another (seen
// once in four runs). That is the servers' own state, which §26 does
// not move between replicas, not forwarding; so every replica's server
// runs them once before the suite, and all three list what one process
// lists after server-stateless (re-adding replaces: no new difference).
var primeTools = []string{"test_trigger_tool_change", "test_trigger_prompt_change"}

// primeReplica calls primeTools on the replica at addr, directly.
func primeReplica(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conformance-prime", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		return fmt.Errorf("replica %s: priming: %w", addr, err)
	}
	defer cs.Close()
	for _, name := range primeTools {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%v", res.Content)
		}
		if err != nil {
			return fmt.Errorf("replica %s: priming: %s: %w", addr, name, err)
		}
	}
	return nil
}

// replicasName is the column's name in the tables.
func (h *harness) replicasName() string {
	if h.replicasControl {
		return replicasColumnName + ", forwarding off"
	}
	return replicasColumnName
}

// replicaCounts are a replica's dispatcher counters (docs/design.md §26).
type replicaCounts struct{ Forwarded, OwnerGone, LoopRefused uint64 }

// scrapeReplica reads the counters from the /metrics of the replica
// listening on addr.
func scrapeReplica(addr string) (replicaCounts, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return replicaCounts{}, fmt.Errorf("replica %s: /metrics: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	if err != nil {
		return replicaCounts{}, fmt.Errorf("replica %s: /metrics: %w", addr, err)
	}
	rc, err := parseReplicaCounts(string(body))
	if err != nil {
		return replicaCounts{}, fmt.Errorf("replica %s: /metrics: %w", addr, err)
	}
	return rc, nil
}

// parseReplicaCounts reads the three counters from a Prometheus text
// exposition; a counter missing is an error (not a replica, or renamed).
func parseReplicaCounts(text string) (replicaCounts, error) {
	var rc replicaCounts
	want := map[string]*uint64{
		"mcpkeep_replica_forwarded_total":    &rc.Forwarded,
		"mcpkeep_replica_owner_gone_total":   &rc.OwnerGone,
		"mcpkeep_replica_loop_refused_total": &rc.LoopRefused,
	}
	found := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		dst, ok := want[f[0]]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil || v < 0 {
			return rc, fmt.Errorf("%s: bad value %q", f[0], f[1])
		}
		*dst = uint64(v)
		found[f[0]] = true
	}
	for _, name := range sortedKeys(want) {
		if !found[name] {
			return rc, fmt.Errorf("no %s", name)
		}
	}
	return rc, nil
}

// replicaJoined reports whether line is a replica's "replica joined" log
// line (JSON): it serves and is in the membership set.
func replicaJoined(line string) bool {
	var rec struct {
		Msg string `json:"msg"`
	}
	return json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "replica joined"
}

// startUntil runs argv (its log to logPath) and waits for a stderr line
// that ready accepts.
func startUntil(ctx context.Context, name, logPath string, argv []string, ready func(string) bool) (*proc, error) {
	seen := make(chan struct{}, 1)
	p, err := start(name, logPath, argv, func(line string) bool {
		if ready(line) {
			seen <- struct{}{}
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	select {
	case <-seen:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, p.err, logPath)
	case <-time.After(startWait):
		p.stop()
		return nil, fmt.Errorf("%s was not ready within %v; see %s", name, startWait, logPath)
	case <-ctx.Done():
		p.stop()
		return nil, errors.Join(ctx.Err(), fmt.Errorf("%s: stopped while starting", name))
	}
}
