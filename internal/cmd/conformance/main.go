// Command conformance runs the MCP project's conformance suite
// (@modelcontextprotocol/conformance) through mcpkeep and compares
// (docs/design.md §12, make conformance).
//
// Server scenarios run against the go-sdk's conformance server
// (conformance/everything-server, at the version go.mod pins) directly
// over Streamable HTTP, and through `mcpkeep run -- server` (stdio),
// `mcpkeep run --url` and `mcpkeep proxy --listen` with a config of that
// one server (behind a shim that allows for the proxy's name prefix).
// Client scenarios run with the go-sdk's everything-client and with
// internal/cmd/conformance-client, which acts through a Supervisor. It
// fails on any scenario that passes directly and fails through mcpkeep,
// and writes the tables between the README's markers.
//
// make conformance installs the suite and Node 22 and runs this with
// -node and -suite; every build goes into a temporary directory that is
// removed at the end (-keep keeps it, with every log and result).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
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
	eras := flag.Bool("eras", os.Getenv("MCPKEEP_CONFORMANCE_ERAS") == "1", "with the 0.2.x suite: both requirement sets over both eras' columns (eras.go; make conformance-2026 sets it by MCPKEEP_CONFORMANCE_ERAS=1)")
	repeat := flag.Int("repeat", 1, "run the server scenarios this many times through each mcpkeep target; a scenario failing in any repetition fails")
	flag.Parse()
	erasMode = *eras
	if *suite == "" {
		fmt.Fprintln(os.Stderr, "conformance: -suite is required")
		os.Exit(2)
	}
	if *repeat < 1 {
		fmt.Fprintf(os.Stderr, "conformance: -repeat %d: want 1 or more\n", *repeat)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, *node, *suite, *readme, *keep, *repeat))
}

// A harness holds the built programs and the work directory.
type harness struct {
	node, suite, work string
	server, client    string // the go-sdk's
	mcpkeep, adapter  string
	repeat            int // runs of the server scenarios through each mcpkeep target
}

func run(ctx context.Context, node, suite, readme string, keep bool, repeat int) int {
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
	h := &harness{node: node, suite: suite, work: work, repeat: repeat}
	if err := h.build(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	if erasMode {
		return runEras(ctx, h, readme)
	}
	servers := []column{h.column(ctx, referenceColumn, h.direct, 1)}
	if servers[0].Err != nil || len(servers[0].Results) == 0 {
		fmt.Fprintf(os.Stderr, "conformance: the direct run gave no results: %v\n", servers[0].Err)
		return 1
	}
	servers = append(servers,
		h.column(ctx, "run (stdio)", h.runStdio, h.repeat),
		h.column(ctx, "run --url", h.runURL, h.repeat),
		h.column(ctx, "proxy --listen", h.proxy, h.repeat))
	scs, skipped, err := h.clientScenarios(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	clients := []column{h.clients(ctx, "go-sdk client", h.client, scs), h.clients(ctx, "mcpkeep Supervisor", h.adapter, scs)}

	body := tables(servers, clients, skipped)
	fmt.Print("\n" + body)
	code := 0
	for _, c := range append(servers[1:], clients[1:]...) {
		if c.Err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", c.Name, c.Err)
			code = 1
		}
	}
	regs := append(compare(servers), compare(clients)...)
	for _, r := range regs {
		fmt.Fprintln(os.Stderr, "conformance: REGRESSION", r)
		code = 1
	}
	if readme != "" {
		if err := writeTables(readme, body); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", readme, err)
			code = 1
		}
	}
	if code == 0 {
		fmt.Println("conformance: every scenario that passes directly passes through mcpkeep")
	}
	return code
}

// tables is what make conformance prints and writes into the README: the
// server and client tables, and the client scenarios left out.
func tables(servers, clients []column, skipped []string) string {
	body := table("server scenario", servers) + "\n" + table("client scenario", clients)
	if len(skipped) > 0 {
		body += "\nNot run: " + codeList(skipped) + " (the go-sdk's conformance baseline lists them: " +
			"mechanisms its client does not implement).\n"
	}
	return body
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
	}{{pkgServer, &h.server}, {pkgClient, &h.client}, {pkgMcpkeep, &h.mcpkeep}, {pkgAdapter, &h.adapter}} {
		*b.out = filepath.Join(bin, filepath.Base(b.pkg))
		cmd := exec.CommandContext(ctx, "go", "build", "-o", *b.out, b.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b.pkg, err)
		}
	}
	return nil
}

// A target starts what the suite is pointed at and returns its URL and
// the function that stops it all.
type target func(ctx context.Context, dir string) (url string, stop func(), err error)

// column runs every server scenario against one target, reps times (see
// repeat.go); only the reference column (reps 1) retries a failure.
func (h *harness) column(ctx context.Context, name string, t target, reps int) column {
	dir := filepath.Join(h.work, slug(name))
	col := column{Name: name}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		col.Err = err
		return col
	}
	fmt.Printf("conformance: server scenarios %s\n", name)
	u, stop, err := t(ctx, dir)
	if err != nil {
		col.Err = err
		return col
	}
	defer stop()
	var runs []map[string]outcome
	for i := 1; i <= reps; i++ {
		rdir := dir
		if reps > 1 {
			rdir = filepath.Join(dir, fmt.Sprintf("rep%d", i))
		}
		start := time.Now()
		out := filepath.Join(rdir, "results")
		// The suite exits non-zero when a scenario fails: the results say which.
		_ = h.suiteRun(ctx, filepath.Join(rdir, "suite.log"), suiteTimeout, nil, "server", "--url", u, "-o", out)
		res, err := readResults(out)
		if err != nil {
			col.Err = fmt.Errorf("repetition %d: %w", i, err)
			return col
		}
		if name == referenceColumn {
			h.retryFailed(ctx, name, dir, u, res)
		}
		failed := 0
		for _, o := range res {
			if !o.ok() {
				failed++
			}
		}
		if reps > 1 {
			fmt.Printf("conformance: %s: repetition %d of %d: %d scenarios, %d failed, %v\n",
				name, i, reps, len(res), failed, time.Since(start).Round(time.Second))
		}
		runs = append(runs, res)
	}
	col.Results = merge(runs)
	return col
}

// referenceColumn is the column of the scenarios run directly.
const referenceColumn = "direct"

// retryFailed runs each failed scenario of the reference column once
// more, alone: a failure that does not repeat is a flake of the moment (a
// loaded machine) of the server itself, said so on the output, and the
// scenario counts by its retry. A failure that repeats stands. Failures
// through mcpkeep are not retried (repeat.go).
func (h *harness) retryFailed(ctx context.Context, name, dir, u string, results map[string]outcome) {
	for _, sc := range slices.Sorted(maps.Keys(results)) {
		if results[sc].ok() {
			continue
		}
		out := filepath.Join(dir, "retry-"+slug(sc))
		_ = h.suiteRun(ctx, filepath.Join(dir, "retry-"+slug(sc)+".log"), suiteTimeout, nil,
			"server", "--url", u, "--scenario", sc, "-o", out)
		again, err := readResults(out)
		if o, ok := again[sc]; err == nil && ok && o.ok() {
			fmt.Printf("conformance: %s: %s failed once and passed when run again (a flake, not a regression): %s\n",
				name, sc, strings.Join(results[sc].Failures, "; "))
			results[sc] = o
		}
	}
}

// clients runs the client scenarios with one client program. The suite
// fails a client scenario on a WARNING check too (a SHOULD not met), and
// so does this comparison.
func (h *harness) clients(ctx context.Context, name, program string, scenarios []string) column {
	dir := filepath.Join(h.work, slug(name))
	col := column{Name: name, Results: map[string]outcome{}}
	fmt.Printf("conformance: client scenarios %s\n", name)
	for _, sc := range scenarios {
		col.Results[sc] = h.clientScenario(ctx, dir, program, sc)
	}
	return col
}

// clientScenario runs one client scenario with program (extra: more of
// the suite's flags) and returns its strict outcome.
func (h *harness) clientScenario(ctx context.Context, dir, program, sc string, extra ...string) outcome {
	out := filepath.Join(dir, "results")
	args := append([]string{"client", "--command", program, "--scenario", sc}, extra...)
	err := h.suiteRun(ctx, filepath.Join(dir, slug(sc)+".log"), clientTimeout, nil, append(args, "-o", out)...)
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

// direct: the go-sdk's server over Streamable HTTP, stateful.
func (h *harness) direct(ctx context.Context, dir string) (string, func(), error) {
	return h.httpServer(ctx, dir)
}

func (h *harness) httpServer(ctx context.Context, dir string) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	p, err := start("everything-server", filepath.Join(dir, "server.log"), []string{h.server, "-http", addr, "-stateless=false"}, nil)
	if err != nil {
		return "", nil, err
	}
	if err := waitAccept(ctx, p, addr); err != nil {
		p.stop()
		return "", nil, err
	}
	return "http://" + addr + "/mcp", p.stop, nil
}

var mcpkeepListen = []string{"--listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}

// runStdio: mcpkeep run --listen, the server a stdio child of mcpkeep.
func (h *harness) runStdio(ctx context.Context, dir string) (string, func(), error) {
	argv := append(append([]string{h.mcpkeep, "run"}, mcpkeepListen...), "--", h.server)
	p, u, err := startMcpkeep(ctx, "mcpkeep run", filepath.Join(dir, "mcpkeep.log"), argv)
	if err != nil {
		return "", nil, err
	}
	return u, p.stop, nil
}

// runURL: mcpkeep run --listen --url, in front of the HTTP server.
func (h *harness) runURL(ctx context.Context, dir string) (string, func(), error) {
	return h.inFront(h.httpServer)(ctx, dir)
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

// proxyServer is the proxy config's name of the one server: its tools
// and prompts are "ev__<name>" through the proxy.
const proxyServer = "ev"

// proxy: mcpkeep proxy --listen with a config of the one stdio server,
// behind the shim that allows for the name prefix.
func (h *harness) proxy(ctx context.Context, dir string) (string, func(), error) {
	cfg := filepath.Join(dir, "mcpkeep.json")
	conf := fmt.Sprintf(`{"mcpServers": {%q: {"command": %q}}}`, proxyServer, h.server)
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
	sh := newShim(pu, proxyServer+"__")
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
