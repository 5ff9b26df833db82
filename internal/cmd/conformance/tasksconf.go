package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The tasks scenarios (docs/design.md §25): the suite's tasks scenarios
// of the 2026-07-28 requirement set call tools of their own (greet,
// slow_compute, failing_job, ...) that the go-sdk's everything-server
// lacks, so in front of it they fail whatever mcpkeep does. They run
// here, alone, against internal/cmd/conformance-tasks-server, which has
// those tools as plain tools and no tasks: directly (the baseline) and
// through mcpkeep run (stdio), run --url and proxy --listen with the tasks
// policy tasksPolicy. mustpass_tasks.txt holds what mcpkeep must pass.

const pkgTasksServer = "./internal/cmd/conformance-tasks-server"

// The tasks policy of the columns through mcpkeep: "auto" with a grace
// of 300ms. The scenarios want a plain answer from greet (a sync tool
// must not become a task, so not "always") and a task from every call
// that works 1s or more (slow_compute with seconds 1, failing_job,
// protocol_error_job): the grace must sit well below 1s and above the
// hop of a quick call on a loaded machine (docs/design.md §25). Tools
// the suite registers with taskSupport "required" are "required" here:
// failing_job (tasks-required-task-error wants -32021 from a host that
// did not declare the extension; the others that call it declare it).
// Under "auto" a 2026-07-28 host's call whose task asks for input within
// the grace is answered as a call that needs input, and becomes a task
// only when it still works after the answer (test_tool_with_task, for
// tasks-mrtr-composition); confirm_delete and multi_input ask at once
// too, but tasks-mrtr-input wants their task at once, so they are
// "always": tools whose work is the asking (a person's confirmation),
// which a user wants held as a task the host can leave and come back to.
var (
	tasksFlags = []string{"--tasks", "auto", "--tasks-grace", "300ms", "--tasks-tool", "failing_job=required",
		"--tasks-tool", "confirm_delete=always", "--tasks-tool", "multi_input=always"}
	tasksPolicyJSON = `{"mode": "auto", "graceMs": 300, "tools": {"failing_job": "required", "confirm_delete": "always", "multi_input": "always"}}`
)

// tasksRevision is the requirement set the tasks scenarios belong to.
const tasksRevision = "2026-07-28"

// mustPassTasksFile lists the tasks scenarios mcpkeep must pass in front
// of the tasks server: a scenario and optional column ids a line.
//
//go:embed mustpass_tasks.txt
var mustPassTasksFile []byte

const mustPassTasksName = "internal/cmd/conformance/mustpass_tasks.txt"

// tasksColumnIDs name the columns through mcpkeep in mustpass_tasks.txt,
// in the order of tasksRun.cols[1:].
var tasksColumnIDs = []string{"stdio", "url", "proxy"}

// A tasksRun is the tasks scenarios' columns: directly, then through
// mcpkeep in the order of tasksColumnIDs.
type tasksRun struct {
	cols []column
	must map[string][]string
	err  error
}

func parseTasksMustPass(b []byte) (map[string][]string, error) {
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, c := range f[1:] {
			if !slices.Contains(tasksColumnIDs, c) {
				return nil, fmt.Errorf("%s:%d: column %q is none of %s", mustPassTasksName, n, c, strings.Join(tasksColumnIDs, ", "))
			}
		}
		if _, dup := m[f[0]]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", mustPassTasksName, n, f[0])
		}
		m[f[0]] = nil
		if len(f) > 1 {
			m[f[0]] = f[1:]
		}
	}
	return m, sc.Err()
}

// tasksScenarioNames picks the tasks scenarios out of the suite's
// `list --server --requirements 2026-07-28` ("  - name [server]" lines).
func tasksScenarioNames(list []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		name, ok := strings.CutPrefix(t, "- ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		if strings.HasPrefix(name, "tasks-") {
			out = append(out, name)
		}
	}
	return out
}

// tasksConf builds the tasks server and runs the tasks scenarios through
// each column (-jobs at a time).
func (h *harness) tasksConf(ctx context.Context) tasksRun {
	var tr tasksRun
	if tr.must, tr.err = parseTasksMustPass(mustPassTasksFile); tr.err != nil {
		return tr
	}
	bin := h.tasksServer // built with the others (main.go)
	list, err := h.suiteOutput(ctx, "list", "--server", "--requirements", tasksRevision)
	if err != nil {
		tr.err = fmt.Errorf("the suite's list: %w", err)
		return tr
	}
	scenarios := tasksScenarioNames(list)
	if len(scenarios) == 0 {
		tr.err = fmt.Errorf("the suite lists no tasks scenarios for %s", tasksRevision)
		return tr
	}
	targets := []struct {
		name string
		t    target
	}{
		{"direct", h.tasksServerHTTP(bin, true)},
		{"run (stdio)", h.tasksStdio(bin)},
		{"run --url", h.tasksInFront(h.tasksServerHTTP(bin, false))},
		{"proxy --listen", h.tasksProxy(bin)},
	}
	tr.cols = make([]column, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() { tr.cols[i] = h.tasksColumn(ctx, tg.name, tg.t, scenarios) })
	}
	wg.Wait()
	return tr
}

// tasksColumn starts one target and runs each scenario alone against it.
func (h *harness) tasksColumn(ctx context.Context, name string, t target, scenarios []string) column {
	col := column{Name: name, Results: map[string]outcome{}}
	release, err := h.slot(ctx)
	if err != nil {
		col.Err = err
		return col
	}
	defer release()
	dir := filepath.Join(h.work, "tasks", slug(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		col.Err = err
		return col
	}
	fmt.Printf("conformance: tasks scenarios, %s\n", name)
	u, stop, err := t(ctx, dir)
	if err != nil {
		col.Err = err
		return col
	}
	defer stop()
	for _, sc := range scenarios {
		out := filepath.Join(dir, slug(sc))
		// --force: an extension's scenario is on no spec timeline, and
		// --scenario with --spec-version alone skips it.
		_ = h.suiteRun(ctx, out+".log", suiteTimeout, nil,
			"server", "--url", u, "--scenario", sc, "--spec-version", tasksRevision, "--force", "-o", out)
		res, err := readResults(out)
		o, ok := res[sc]
		if err != nil || !ok {
			o = outcome{Failed: 1, Failures: []string{fmt.Sprint("no result: see ", out+".log")}}
		}
		col.Results[sc] = o
	}
	return col
}

// tasksServerHTTP is the tasks server over Streamable HTTP. Directly it
// is stateless (the go-sdk serves 2026-07-28 requests only there); behind
// run --url stateful, which mcpkeep reaches on the 2025-11-25 wire and
// where the server's elicitations have a session to reach mcpkeep.
func (h *harness) tasksServerHTTP(bin string, stateless bool) target {
	return h.httpServer("conformance-tasks-server", bin, stateless)
}

// tasksStdio: mcpkeep run --listen with the tasks policy, the tasks
// server a stdio child.
func (h *harness) tasksStdio(bin string) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		argv := append(append(append([]string{h.mcpkeep, "run"}, mcpkeepListen...), tasksFlags...), "--eras", "twin", "--", bin)
		p, u, err := startMcpkeep(ctx, "mcpkeep run", filepath.Join(dir, "mcpkeep.log"), argv)
		if err != nil {
			return "", nil, err
		}
		return u, p.stop, nil
	}
}

// tasksInFront: mcpkeep run --listen --url with the tasks policy in front
// of the server that server starts.
func (h *harness) tasksInFront(server target) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		su, sstop, err := server(ctx, dir)
		if err != nil {
			return "", nil, err
		}
		argv := append(append(append([]string{h.mcpkeep, "run"}, mcpkeepListen...), tasksFlags...), "--url", su)
		p, u, err := startMcpkeep(ctx, "mcpkeep run --url", filepath.Join(dir, "mcpkeep.log"), argv)
		if err != nil {
			sstop()
			return "", nil, err
		}
		return u, func() { p.stop(); sstop() }, nil
	}
}

// tasksProxy: mcpkeep proxy --listen with a config of the tasks server
// alone and the tasks policy, behind the shim.
func (h *harness) tasksProxy(bin string) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		return h.proxyConf(ctx, dir, fmt.Sprintf(`{"mcpServers": {%q: %s}}`, tasksProxyServer, tasksServerEntry(bin)),
			tasksProxyServer+"__", nil)
	}
}

// tasksServerEntry is the proxy config's entry of the tasks server bin
// with the tasks policy: this column's and the era tables' proxy column's.
func tasksServerEntry(bin string) string {
	return fmt.Sprintf(`{"command": %q, "eras": "twin", "tasks": %s}`, bin, tasksPolicyJSON)
}

// report writes the table and says what fails: a scenario that passes
// directly or that mustpass_tasks.txt lists and fails through a column;
// it lists what passes and is not listed. It returns false on a failure.
func (tr tasksRun) report(body *strings.Builder) bool {
	if tr.err != nil {
		fmt.Fprintln(os.Stderr, "conformance: tasks scenarios:", tr.err)
		return false
	}
	ok := true
	for _, c := range tr.cols {
		if c.Err != nil {
			fmt.Fprintf(os.Stderr, "conformance: tasks scenarios, %s: %v\n", c.Name, c.Err)
			ok = false
		}
	}
	for _, reg := range tr.regressions() {
		fmt.Fprintf(os.Stderr, "conformance: REGRESSION (tasks scenarios) %s\n", reg)
		ok = false
	}
	for i, id := range tasksColumnIDs {
		c := tr.cols[i+1]
		var extra []string
		for _, sc := range sortedKeys(c.Results) {
			if c.Results[sc].ok() && !tr.cols[0].Results[sc].ok() && !mustPasses(tr.must, sc, id) {
				extra = append(extra, sc)
			}
		}
		if len(extra) > 0 {
			fmt.Printf("conformance: tasks scenarios: through %s, %d pass that %s does not list (a line \"<scenario> %s\" holds one): %s\n",
				c.Name, len(extra), mustPassTasksName, id, strings.Join(extra, " "))
		}
	}
	fmt.Fprintf(body, "%s tasks scenarios, against internal/cmd/conformance-tasks-server (the scenarios' tools, no tasks):\n\n%s\n",
		tasksRevision, table("tasks scenario", tr.cols))
	return ok
}

// regressions: through each column, the scenarios that pass directly or
// that the list holds it to, and fail (missing counts as failing).
func (tr tasksRun) regressions() []regression {
	var regs []regression
	for sc := range tr.must {
		if _, ran := tr.cols[0].Results[sc]; !ran && tr.cols[0].Err == nil {
			regs = append(regs, regression{Scenario: sc, Column: mustPassTasksName + ": the suite ran no such scenario"})
		}
	}
	for _, sc := range sortedKeys(tr.cols[0].Results) {
		for i, id := range tasksColumnIDs {
			c := tr.cols[i+1]
			o, ran := c.Results[sc]
			if ran && o.ok() {
				continue
			}
			switch {
			case tr.cols[0].Results[sc].ok():
				regs = append(regs, regression{Scenario: sc, Column: c.Name, Failures: o.Failures})
			case mustPasses(tr.must, sc, id):
				regs = append(regs, regression{Scenario: sc, Column: c.Name + " (" + mustPassTasksName + ")", Failures: o.Failures})
			}
		}
	}
	return regs
}

// onlyTasks runs the tasks scenarios alone (to work on them; the README's
// tables are left as they are).
var onlyTasks = flag.Bool("only-tasks", false, "run only the tasks scenarios against the tasks server, and write no README")

// runTasksOnly is runEras with -only-tasks.
func runTasksOnly(ctx context.Context, h *harness) int {
	var body strings.Builder
	ok := h.tasksConf(ctx).report(&body)
	fmt.Print("\n" + body.String())
	if !ok {
		return 1
	}
	return 0
}
