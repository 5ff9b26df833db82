package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Both eras (docs/design.md §24): the 0.2.x suite's two requirement sets,
// the 2025-11-25 active suite and `--requirements 2026-07-28`, each over
// every column: the go-sdk's everything-server directly, stateful and
// stateless (the SDK serves one era per endpoint), and through mcpkeep:
// `run -- server` and `proxy --listen` (one endpoint for both eras, held
// to whatever passes directly in either mode) and `run --url` in front of
// each mode (held to what the server it fronts passes). Beyond that
// baseline, mustpass.txt names what mcpkeep must pass though the server
// does not (mustpass.go).

// A requirement set is one run of the suite's server scenarios.
type requirementSet struct {
	Name string
	Args []string // added to `server --url U -o DIR`
	// RetryArgs are added to `server --url U --scenario S -o DIR`: the
	// suite refuses --requirements beside --scenario, and a scenario run
	// alone without the set's spec version runs in another era.
	RetryArgs []string
}

var requirementSets = []requirementSet{
	{Name: "2025-11-25 active suite"},
	{Name: "2026-07-28 requirements", Args: []string{"--requirements", "2026-07-28"},
		RetryArgs: []string{"--spec-version", "2026-07-28"}},
}

// An eraColumn is one target and the columns (by index) it is held to;
// id names it in mustpass.txt.
type eraColumn struct {
	id, name string
	t        target
	refs     []int
}

func (h *harness) eraColumns() []eraColumn {
	ecs := []eraColumn{
		{id: "stateful", name: "direct, stateful", t: h.modeServer(false)},
		{id: "stateless", name: "direct, stateless", t: h.modeServer(true)},
		{id: "stdio", name: "run (stdio)", t: h.runStdio, refs: []int{0, 1}},
		{id: "url-stateful", name: "run --url, stateful", t: h.modeURL(false), refs: []int{0}},
		{id: "url-stateless", name: "run --url, stateless", t: h.modeURL(true), refs: []int{1}},
		{id: "proxy", name: "proxy --listen", t: h.proxy, refs: []int{0, 1}},
	}
	if h.withReplicas {
		// Held to one replica alone, run (stdio) (replicas.go).
		ecs = append(ecs, eraColumn{id: replicasColumnID, name: h.replicasName(), t: h.replicas,
			refs: []int{slices.IndexFunc(ecs, func(ec eraColumn) bool { return ec.id == "stdio" })}})
	}
	return ecs
}

// onlyColumns runs some columns alone (to work on them).
var onlyColumns = flag.String("columns", "", "run only these columns (ids as in mustpass.txt, comma-separated) and the direct ones they are held to: no client or tasks scenarios, and no README")

// pickColumns is the columns of ecs that ids name and those they are
// held to, in their order, their refs renumbered.
func pickColumns(ecs []eraColumn, ids []string) ([]eraColumn, error) {
	keep := make([]bool, len(ecs))
	for _, id := range ids {
		i := slices.IndexFunc(ecs, func(ec eraColumn) bool { return ec.id == id })
		if i < 0 {
			var all []string
			for _, ec := range ecs {
				all = append(all, ec.id)
			}
			return nil, fmt.Errorf("-columns: %q is none of %s", id, strings.Join(all, ", "))
		}
		keep[i] = true
		for _, r := range ecs[i].refs {
			keep[r] = true
		}
	}
	var out []eraColumn
	at := make([]int, len(ecs))
	for i, ec := range ecs {
		if keep[i] {
			at[i] = len(out)
			out = append(out, ec)
		}
	}
	for j := range out {
		refs := make([]int, len(out[j].refs))
		for k, r := range out[j].refs {
			refs[k] = at[r]
		}
		out[j].refs = refs
	}
	return out, nil
}

// A setRun is one requirement set's columns, server and client.
type setRun struct {
	set       requirementSet
	ecs       []eraColumn
	cols      []column
	clients   []column
	skipped   []string
	clientErr error
}

// runEras runs every requirement set over every column (-jobs at a time),
// prints the tables (and writes them between the README's markers) and
// fails on a regression.
func runEras(ctx context.Context, h *harness, readme string) int {
	if *onlyTasks {
		return runTasksOnly(ctx, h) // tasksconf.go
	}
	must, err := parseMustPass(mustPassFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	runs := make([]*setRun, len(requirementSets))
	ecs := h.eraColumns()
	partial := *onlyColumns != ""
	if partial {
		if ecs, err = pickColumns(ecs, strings.Split(*onlyColumns, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			return 2
		}
		readme = ""
	}
	for i, set := range requirementSets {
		runs[i] = &setRun{set: set, ecs: ecs, cols: make([]column, len(ecs))}
	}
	var wg sync.WaitGroup
	for j, ec := range ecs {
		wg.Go(func() {
			for i, c := range h.targetColumns(ctx, ec) {
				runs[i].cols[j] = c
			}
		})
	}
	var tr tasksRun
	if !partial {
		for _, r := range runs {
			wg.Go(func() { r.clients, r.skipped, r.clientErr = h.eraClients(ctx, r.set) })
		}
		wg.Go(func() { tr = h.tasksConf(ctx) }) // tasksconf.go
	}
	wg.Wait()
	for _, r := range runs {
		wg.Go(func() { h.retryDirect(ctx, r) })
	}
	wg.Wait()
	code := 0
	if h.replicasErr != nil {
		fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", h.replicasName(), h.replicasErr)
		code = 1
	}

	var body strings.Builder
	for _, r := range runs {
		rev := r.set.revision()
		for i, c := range r.cols {
			if c.Err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %s, %s: %v\n", r.set.Name, r.ecs[i].name, c.Err)
				code = 1
			}
		}
		for _, e := range must.unknown(rev, r.cols) {
			fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", mustPassName, e)
			code = 1
		}
		for _, reg := range compareEras(r.cols, r.ecs, must.of(rev)) {
			fmt.Fprintf(os.Stderr, "conformance: REGRESSION (%s) %s\n", r.set.Name, reg)
			code = 1
		}
		byCol := map[string][]string{}
		for _, b := range beyond(r.cols, r.ecs, must.of(rev)) {
			byCol[b.Column] = append(byCol[b.Column], b.Scenario)
		}
		for _, c := range sortedKeys(byCol) {
			fmt.Printf("conformance: %s: through %s, %d scenarios pass that fail directly and %s does not list (a line \"%s <scenario>\" holds one): %s\n",
				r.set.Name, c, len(byCol[c]), mustPassName, rev, strings.Join(byCol[c], " "))
		}
		fmt.Fprintf(&body, "%s:\n\n%s\n", r.set.Name, table("server scenario", r.cols))
		if partial {
			continue
		}
		if r.clientErr != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s, client scenarios: %v\n", r.set.Name, r.clientErr)
			code = 1
			continue
		}
		for _, reg := range compare(r.clients) {
			fmt.Fprintf(os.Stderr, "conformance: REGRESSION (%s) %s\n", r.set.Name, reg)
			code = 1
		}
		fmt.Fprintf(&body, "%s\n", table("client scenario", r.clients))
		if len(r.skipped) > 0 {
			fmt.Fprintf(&body, "Not run: %s (the go-sdk's conformance baseline lists them: mechanisms its client does not implement).\n\n", codeList(r.skipped))
		}
	}
	if !partial && !tr.report(&body) {
		code = 1
	}
	fmt.Print("\n" + body.String())
	if readme != "" {
		if err := writeTables(readme, body.String()); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", readme, err)
			code = 1
		}
	}
	if code == 0 && !partial {
		fmt.Println("conformance: every scenario that passes directly passes through mcpkeep, in both eras")
	}
	return code
}

// compareEras lists, for each column with references, the scenarios that
// pass in one of its references and fail in it (missing counts as
// failing), and those must says it passes that fail in it.
func compareEras(cols []column, ecs []eraColumn, must map[string][]string) []regression {
	var regs []regression
	scenarios := map[string]bool{}
	for _, c := range cols {
		for sc := range c.Results {
			scenarios[sc] = true
		}
	}
	for sc := range must {
		scenarios[sc] = true
	}
	for _, sc := range sortedKeys(scenarios) {
		for i, ec := range ecs {
			if len(ec.refs) == 0 {
				continue
			}
			passesDirectly := slices.ContainsFunc(ec.refs, func(r int) bool { return cols[r].Results[sc].ok() })
			o, ok := cols[i].Results[sc]
			if ok && o.ok() {
				continue
			}
			switch {
			case passesDirectly:
				regs = append(regs, regression{Scenario: sc, Column: cols[i].Name, Failures: o.Failures})
			case mustPasses(must, sc, ec.id):
				regs = append(regs, regression{Scenario: sc, Column: cols[i].Name + " (" + mustPassName + ")", Failures: o.Failures})
			}
		}
	}
	return regs
}

// beyond lists the scenarios that pass through a column with references
// though in none of them, and that must does not hold it to: what
// mustpass.txt could add.
func beyond(cols []column, ecs []eraColumn, must map[string][]string) []regression {
	var out []regression
	for i, ec := range ecs {
		if len(ec.refs) == 0 {
			continue
		}
		for _, sc := range sortedKeys(cols[i].Results) {
			passesDirectly := slices.ContainsFunc(ec.refs, func(r int) bool { return cols[r].Results[sc].ok() })
			if cols[i].Results[sc].ok() && !passesDirectly && !mustPasses(must, sc, ec.id) {
				out = append(out, regression{Scenario: sc, Column: cols[i].Name})
			}
		}
	}
	return out
}

// targetColumns starts one target and runs every requirement set's
// scenarios against it, one set after the other (one endpoint of one
// process serves both eras, §24): through mcpkeep h.repeat times each (a
// scenario failing in any repetition fails, repeat.go), directly once
// (retryDirect may run its failures again). It returns a column per set.
func (h *harness) targetColumns(ctx context.Context, ec eraColumn) []column {
	cols := make([]column, len(requirementSets))
	for i := range cols {
		cols[i].Name = ec.name
	}
	fail := func(err error) []column {
		for i := range cols {
			if cols[i].Results == nil && cols[i].Err == nil {
				cols[i].Err = err
			}
		}
		return cols
	}
	release, err := h.slot(ctx)
	if err != nil {
		return fail(err)
	}
	defer release()
	dir := filepath.Join(h.work, slug(ec.name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	fmt.Printf("conformance: %s\n", ec.name)
	u, stop, err := ec.t(ctx, dir)
	if err != nil {
		return fail(err)
	}
	defer stop()
	reps := 1
	if len(ec.refs) > 0 {
		reps = h.repeat
	}
	for i, set := range requirementSets {
		var runs []map[string]outcome
		for rep := 1; rep <= reps; rep++ {
			rdir := filepath.Join(dir, slug(set.Name))
			if reps > 1 {
				rdir = filepath.Join(rdir, fmt.Sprintf("rep%d", rep))
			}
			out := filepath.Join(rdir, "results")
			// The suite exits non-zero when a scenario fails: the results say which.
			_ = h.suiteRun(ctx, filepath.Join(rdir, "suite.log"), suiteTimeout, nil,
				append([]string{"server", "--url", u, "-o", out}, set.Args...)...)
			res, err := readResults(out)
			if err != nil {
				cols[i].Err = fmt.Errorf("%s, repetition %d: %w", set.Name, rep, err)
				break
			}
			runs = append(runs, res)
		}
		if cols[i].Err == nil {
			cols[i].Results = merge(runs)
		}
	}
	return cols
}

// retryDirect runs once more, alone, each scenario that failed in a
// direct column where that hides a regression: it fails through a column
// held to this one, and in each of that column's references. A failure
// that does not repeat is the loaded machine's (said so), and the
// scenario counts by its retry; one that repeats stands. Failures through
// mcpkeep are never retried (repeat.go).
func (h *harness) retryDirect(ctx context.Context, r *setRun) {
	for d, dc := range r.ecs {
		if len(dc.refs) > 0 || r.cols[d].Err != nil {
			continue
		}
		var again []string
		for _, sc := range sortedKeys(r.cols[d].Results) {
			if o := r.cols[d].Results[sc]; o.ok() || o.skipped() {
				continue // a skip is the suite's, everywhere
			}
			for i, ec := range r.ecs {
				hidden := slices.Contains(ec.refs, d) && !r.cols[i].Results[sc].ok() &&
					!slices.ContainsFunc(ec.refs, func(ref int) bool { return r.cols[ref].Results[sc].ok() })
				if hidden {
					again = append(again, sc)
					break
				}
			}
		}
		if len(again) == 0 {
			continue
		}
		h.retryAlone(ctx, r.set, dc, r.cols[d].Results, again)
	}
}

// retryAlone restarts direct column dc's server and runs each of
// scenarios alone against it.
func (h *harness) retryAlone(ctx context.Context, set requirementSet, dc eraColumn, results map[string]outcome, scenarios []string) {
	dir := filepath.Join(h.work, slug(dc.name), "retry", slug(set.Name))
	release, err := h.slot(ctx)
	if err != nil {
		return
	}
	defer release()
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	u, stop, err := dc.t(ctx, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %s, %s: the retry's server: %v\n", set.Name, dc.name, err)
		return
	}
	defer stop()
	for _, sc := range scenarios {
		rout := filepath.Join(dir, slug(sc))
		// --scenario runs one scenario whatever set it is in.
		_ = h.suiteRun(ctx, rout+".log", suiteTimeout, nil,
			append([]string{"server", "--url", u, "--scenario", sc, "-o", rout}, set.RetryArgs...)...)
		again, err := readResults(rout)
		if o, ok := again[sc]; err == nil && ok && o.ok() {
			fmt.Printf("conformance: %s, %s: %s failed once and passed when run again (a flake): %s\n",
				set.Name, dc.name, sc, strings.Join(results[sc].Failures, "; "))
			results[sc] = o
		}
	}
}

// modeServer is the go-sdk's server over Streamable HTTP, stateless or
// stateful.
func (h *harness) modeServer(stateless bool) target {
	return h.httpServer("everything-server", h.server, stateless)
}

// httpServer runs bin (a go-sdk conformance server taking -http and
// -stateless) over Streamable HTTP on a free loopback port.
func (h *harness) httpServer(name, bin string, stateless bool) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		h.bindMu.Lock()
		defer h.bindMu.Unlock()
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", port)
		p, err := start(name, filepath.Join(dir, "server.log"),
			[]string{bin, "-http", addr, fmt.Sprintf("-stateless=%v", stateless)}, nil)
		if err != nil {
			return "", nil, err
		}
		if err := waitAccept(ctx, p, addr); err != nil {
			p.stop()
			return "", nil, err
		}
		return "http://" + addr + "/mcp", p.stop, nil
	}
}

// modeURL is mcpkeep run --listen --url in front of the server in one
// mode.
func (h *harness) modeURL(stateless bool) target {
	return h.inFront(h.modeServer(stateless))
}
