// Command conformance runs the MCP project's conformance suite
// (@modelcontextprotocol/conformance 0.2.x) through mcpkeep and compares
// (docs/design.md §12, §24; make conformance).
//
// Both of the suite's requirement sets (the 2025-11-25 active suite and
// `--requirements 2026-07-28`) run against the go-sdk's conformance server
// (conformance/everything-server, at the version go.mod pins) directly
// over Streamable HTTP, stateful and stateless, and through `mcpkeep run
// -- server` (stdio), `mcpkeep run --url` in front of each mode and
// `mcpkeep proxy --listen` with a config of that server and
// internal/cmd/conformance-tasks-server, whose tools the tasks scenarios
// call (behind a shim that allows for the proxy's name prefixes); see
// eras.go. The tasks scenarios also run alone against the tasks server
// (tasksconf.go). Where
// redis-server and haproxy are on PATH (-replicas), a last column runs
// both sets through haproxy in front of three `mcpkeep run --store`
// replicas, held to `run -- server` (replicas.go). Client
// scenarios run with the go-sdk's everything-client and with
// internal/cmd/conformance-client, which acts through a Supervisor. It
// fails on any scenario that passes directly and fails through mcpkeep,
// or that mustpass.txt says mcpkeep passes, and writes the tables
// between the README's markers.
//
// make conformance installs the suite and Node 22 and runs this with
// -node and -suite; every build goes into a temporary directory that is
// removed at the end (-keep keeps it, with every log and result). Columns
// and client scenarios run -jobs at a time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
)

// Builds: the go-sdk's conformance programs come from the module cache at
// the version go.mod requires.
const (
	pkgServer  = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"
	pkgClient  = "github.com/modelcontextprotocol/go-sdk/conformance/everything-client"
	pkgMcpkeep = "./cmd/mcpkeep"
	pkgAdapter = "./internal/cmd/conformance-client"
)

// Bounds: one suite run (every server scenario of one column), one client
// scenario.
const (
	suiteTimeout  = 5 * time.Minute
	clientTimeout = 60 * time.Second
)

func main() {
	node := flag.String("node", "node", "the Node.js (22 or newer) that runs the suite")
	suite := flag.String("suite", "", "the suite's entry point, node_modules/@modelcontextprotocol/conformance/dist/index.js")
	readme := flag.String("readme", "", "write the tables between the conformance markers of this file")
	keep := flag.Bool("keep", false, "keep the work directory (builds, logs, results)")
	repeat := flag.Int("repeat", 1, "run the server scenarios this many times through each mcpkeep target; a scenario failing in any repetition fails")
	jobs := flag.Int("jobs", 0, "columns and client scenarios run at once (0: as many as CPUs)")
	reps := flag.String("replicas", replicasAuto, "the column of three replicas behind haproxy (redis-server and haproxy from PATH): auto (when both are there; "+replicatest.RequireEnv+"=1 makes it on), on, off, or control (forwarding off: what it prevents; expected to fail)")
	flag.Parse()
	if *suite == "" {
		fmt.Fprintln(os.Stderr, "conformance: -suite is required")
		os.Exit(2)
	}
	if *repeat < 1 {
		fmt.Fprintf(os.Stderr, "conformance: -repeat %d: want 1 or more\n", *repeat)
		os.Exit(2)
	}
	if *jobs < 0 {
		fmt.Fprintf(os.Stderr, "conformance: -jobs %d: want 0 (as many as CPUs) or more\n", *jobs)
		os.Exit(2)
	}
	withReplicas, note, err := replicasWanted(*reps, os.Getenv(replicatest.RequireEnv) == "1", exec.LookPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "conformance:", note)
	}
	if *jobs == 0 {
		*jobs = runtime.NumCPU()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, *node, *suite, *readme, *keep, *repeat, *jobs, withReplicas, *reps == replicasControl))
}

// A harness holds the built programs and the work directory.
type harness struct {
	node, suite, work string
	server, client    string // the go-sdk's
	mcpkeep, adapter  string
	repeat            int   // runs of the server scenarios through each mcpkeep target
	withReplicas      bool  // the replicas column (replicas.go)
	replicasControl   bool  // with forwarding off (-replicas control)
	replicasErr       error // its forwarding counts' verdict (countForwards)
	// slots bounds what runs at once (-jobs): a column (its target and
	// its suite runs) or a client scenario holds one.
	slots chan struct{}
	// bindMu keeps one server between picking a free port and listening
	// on it (freePort), so two columns starting at once never pick one
	// port.
	bindMu sync.Mutex

	// tasksServer is internal/cmd/conformance-tasks-server (tasksconf.go);
	// tasksNames are the tools and prompts it offers, each with its
	// prefix in the proxy column (proxy).
	tasksServer string
	tasksNames  map[shimName]string
}

func run(ctx context.Context, node, suite, readme string, keep bool, repeat, jobs int, withReplicas, replicasControl bool) int {
	start := time.Now()
	work, err := os.MkdirTemp("", "mcpkeep-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	if keep {
		fmt.Println("conformance: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	h := &harness{node: node, suite: suite, work: work, repeat: repeat, slots: make(chan struct{}, jobs), withReplicas: withReplicas, replicasControl: replicasControl}
	if err := h.build(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	code := runEras(ctx, h, readme)
	fmt.Printf("conformance: done in %v\n", time.Since(start).Round(time.Second))
	return code
}

// slot waits for a free slot (-jobs) and returns its release.
func (h *harness) slot(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func codeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

func writeTables(path, body string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := splice(doc, body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func (h *harness) build(ctx context.Context) error {
	bin := filepath.Join(h.work, "bin")
	for _, b := range []struct {
		pkg string
		out *string
	}{{pkgServer, &h.server}, {pkgClient, &h.client}, {pkgMcpkeep, &h.mcpkeep}, {pkgAdapter, &h.adapter}, {pkgTasksServer, &h.tasksServer}} {
		*b.out = filepath.Join(bin, filepath.Base(b.pkg))
		cmd := exec.CommandContext(ctx, "go", "build", "-o", *b.out, b.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b.pkg, err)
		}
	}
	var err error
	h.tasksNames, err = offered(ctx, h.tasksServer, tasksProxyServer+"__")
	return err
}

// A target starts what the suite is pointed at and returns its URL and
// the function that stops it all.
type target func(ctx context.Context, dir string) (url string, stop func(), err error)

// clientScenario runs one client scenario with program (extra: more of
// the suite's flags) and returns its strict outcome.
func (h *harness) clientScenario(ctx context.Context, dir, program, sc string, extra ...string) outcome {
	release, err := h.slot(ctx)
	if err != nil {
		return outcome{Failed: 1, Failures: []string{err.Error()}}
	}
	defer release()
	// Its own results directory: scenarios run at once (-jobs).
	out := filepath.Join(dir, "results", slug(sc))
	args := append([]string{"client", "--command", program, "--scenario", sc}, extra...)
	err = h.suiteRun(ctx, filepath.Join(dir, slug(sc)+".log"), clientTimeout, nil, append(args, "-o", out)...)
	res, rerr := readResults(out)
	o, ok := res[sc]
	o = strict(o)
	switch {
	case rerr != nil || !ok:
		o = outcome{Failed: 1, Failures: []string{fmt.Sprint("no result: ", errors.Join(rerr, err))}}
	case err != nil && o.ok():
		// The client itself failed (the suite's verdict counts its
		// exit) though no check did.
		o.Failed++
		o.Failures = append(o.Failures, "the client failed: see "+filepath.Join(dir, slug(sc)+".log"))
	}
	return o
}

// suiteRun runs the suite's CLI with args, its output to logPath,
// bounded by timeout.
func (h *harness) suiteRun(ctx context.Context, logPath string, timeout time.Duration, env []string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, h.node, append([]string{h.suite}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("the suite did not finish within %v; see %s", timeout, logPath)
	}
	return err
}

var mcpkeepListen = []string{"--listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}

// runStdio: mcpkeep run --listen, the server a stdio child of mcpkeep.
func (h *harness) runStdio(ctx context.Context, dir string) (string, func(), error) {
	argv := append(append([]string{h.mcpkeep, "run"}, mcpkeepListen...), "--eras", "twin", "--", h.server)
	p, u, err := startMcpkeep(ctx, "mcpkeep run", filepath.Join(dir, "mcpkeep.log"), argv)
	if err != nil {
		return "", nil, err
	}
	return u, p.stop, nil
}

// inFront is mcpkeep run --listen --url in front of the server that
// server starts.
func (h *harness) inFront(server target) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		su, sstop, err := server(ctx, dir)
		if err != nil {
			return "", nil, err
		}
		argv := append(append([]string{h.mcpkeep, "run"}, mcpkeepListen...), "--url", su)
		p, u, err := startMcpkeep(ctx, "mcpkeep run --url", filepath.Join(dir, "mcpkeep.log"), argv)
		if err != nil {
			sstop()
			return "", nil, err
		}
		return u, func() { p.stop(); sstop() }, nil
	}
}

// The proxy config's names of its servers: through the proxy the
// everything-server's tools and prompts are "ev__<name>", the tasks
// server's "tk__<name>".
const (
	proxyServer      = "ev"
	tasksProxyServer = "tk"
)

// proxy: mcpkeep proxy --listen, one front door for a host's servers,
// with a config of both stdio servers: the everything-server and the
// tasks server with the tasks policy of the tasks columns, so that every
// scenario of both requirement sets finds its tools (docs/design.md §24,
// §25). Behind the shim that gives a name the tasks server offers its
// prefix, any other the everything-server's.
func (h *harness) proxy(ctx context.Context, dir string) (string, func(), error) {
	conf := fmt.Sprintf(`{"mcpServers": {%q: {"command": %q, "eras": "twin"}, %q: %s}}`,
		proxyServer, h.server, tasksProxyServer, tasksServerEntry(h.tasksServer))
	return h.proxyConf(ctx, dir, conf, proxyServer+"__", h.tasksNames)
}

// proxyConf is proxy with the config conf, behind a shim that gives the
// names in owned their prefix and any other prefix.
func (h *harness) proxyConf(ctx context.Context, dir, conf, prefix string, owned map[shimName]string) (string, func(), error) {
	cfg := filepath.Join(dir, "mcpkeep.json")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return "", nil, err
	}
	argv := append([]string{h.mcpkeep, "proxy", "--config", cfg}, mcpkeepListen...)
	p, u, err := startMcpkeep(ctx, "mcpkeep proxy", filepath.Join(dir, "mcpkeep.log"), argv)
	if err != nil {
		return "", nil, err
	}
	pu, err := url.Parse(u)
	if err != nil {
		p.stop()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.stop()
		return "", nil, err
	}
	shimLog, err := os.Create(filepath.Join(dir, "shim.log"))
	if err != nil {
		ln.Close()
		p.stop()
		return "", nil, err
	}
	sh := newShim(pu, prefix, owned)
	// A request the suite gives up (a scenario's end) is logged there.
	sh.rp.ErrorLog = log.New(shimLog, "shim: ", log.LstdFlags)
	srv := &http.Server{Handler: sh, ReadHeaderTimeout: 10 * time.Second, ErrorLog: sh.rp.ErrorLog}
	go srv.Serve(ln)
	stopAll := func() {
		sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		p.stop()
		shimLog.Close()
	}
	return "http://" + ln.Addr().String() + "/mcp", stopAll, nil
}

// slug is a name fit for a directory.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
