package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Both eras (-eras, make conformance-2026; docs/design.md §24): the 0.2.x
// suite's two requirement sets, the 2025-11-25 active suite and
// `--requirements 2026-07-28`, each over every column: the go-sdk's
// everything-server directly, stateful and stateless (the SDK serves one
// era per endpoint), and through mcpkeep: `run -- server` and `proxy
// --listen` (one endpoint for both eras, held to whatever passes directly
// in either mode) and `run --url` in front of each mode (held to what
// the server it fronts passes).

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

// An eraColumn is one target and the columns (by index) it is held to.
type eraColumn struct {
	name string
	t    target
	refs []int
}

func (h *harness) eraColumns() []eraColumn {
	return []eraColumn{
		{name: "direct, stateful", t: h.modeServer(false)},
		{name: "direct, stateless", t: h.modeServer(true)},
		{name: "run (stdio)", t: h.runStdio, refs: []int{0, 1}},
		{name: "run --url, stateful", t: h.modeURL(false), refs: []int{0}},
		{name: "run --url, stateless", t: h.modeURL(true), refs: []int{1}},
		{name: "proxy --listen", t: h.proxy, refs: []int{0, 1}},
	}
}

// runEras runs every requirement set over every column, prints the
// tables (and writes them between the README's era markers) and fails on
// a regression.
func runEras(ctx context.Context, h *harness, readme string) int {
	var body strings.Builder
	code := 0
	for _, set := range requirementSets {
		ecs := h.eraColumns()
		cols := make([]column, len(ecs))
		for i, ec := range ecs {
			cols[i] = h.setColumn(ctx, set, ec.name, ec.t)
			if cols[i].Err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %s, %s: %v\n", set.Name, ec.name, cols[i].Err)
				code = 1
			}
		}
		for _, r := range compareEras(cols, ecs) {
			fmt.Fprintf(os.Stderr, "conformance: REGRESSION (%s) %s\n", set.Name, r)
			code = 1
		}
		fmt.Fprintf(&body, "%s:\n\n%s\n", set.Name, table("server scenario", cols))
		clients, skipped, err := h.eraClients(ctx, set)
		if err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s, client scenarios: %v\n", set.Name, err)
			code = 1
			continue
		}
		for _, r := range compare(clients) {
			fmt.Fprintf(os.Stderr, "conformance: REGRESSION (%s) %s\n", set.Name, r)
			code = 1
		}
		fmt.Fprintf(&body, "%s\n", table("client scenario", clients))
		if len(skipped) > 0 {
			fmt.Fprintf(&body, "Not run: %s (the go-sdk's conformance baseline lists them).\n\n", codeList(skipped))
		}
	}
	fmt.Print("\n" + body.String())
	if readme != "" {
		if err := writeEraTables(readme, body.String()); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %s: %v\n", readme, err)
			code = 1
		}
	}
	if code == 0 {
		fmt.Println("conformance: every scenario that passes directly passes through mcpkeep, in both eras")
	}
	return code
}

// compareEras lists, for each column with references, the scenarios that
// pass in one of its references and fail in it (missing counts as
// failing).
func compareEras(cols []column, ecs []eraColumn) []regression {
	var regs []regression
	scenarios := map[string]bool{}
	for _, c := range cols {
		for sc := range c.Results {
			scenarios[sc] = true
		}
	}
	for _, sc := range sortedKeys(scenarios) {
		for i, ec := range ecs {
			if len(ec.refs) == 0 {
				continue
			}
			passesDirectly := slices.ContainsFunc(ec.refs, func(r int) bool { return cols[r].Results[sc].ok() })
			if o, ok := cols[i].Results[sc]; passesDirectly && (!ok || !o.ok()) {
				regs = append(regs, regression{Scenario: sc, Column: cols[i].Name, Failures: o.Failures})
			}
		}
	}
	return regs
}

// setColumn runs one requirement set's scenarios against one target, and
// each failed scenario once more alone (a failure that does not repeat is
// the loaded machine's, said so, and counts by its retry).
func (h *harness) setColumn(ctx context.Context, set requirementSet, name string, t target) column {
	dir := filepath.Join(h.work, slug(set.Name), slug(name))
	col := column{Name: name}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		col.Err = err
		return col
	}
	fmt.Printf("conformance: %s, %s\n", set.Name, name)
	u, stop, err := t(ctx, dir)
	if err != nil {
		col.Err = err
		return col
	}
	defer stop()
	out := filepath.Join(dir, "results")
	// The suite exits non-zero when a scenario fails: the results say which.
	_ = h.suiteRun(ctx, filepath.Join(dir, "suite.log"), suiteTimeout, nil,
		append([]string{"server", "--url", u, "-o", out}, set.Args...)...)
	col.Results, col.Err = readResults(out)
	for _, sc := range sortedKeys(col.Results) {
		if col.Results[sc].ok() {
			continue
		}
		rout := filepath.Join(dir, "retry-"+slug(sc))
		// --scenario runs one scenario whatever set it is in.
		_ = h.suiteRun(ctx, rout+".log", suiteTimeout, nil,
			append([]string{"server", "--url", u, "--scenario", sc, "-o", rout}, set.RetryArgs...)...)
		again, err := readResults(rout)
		if o, ok := again[sc]; err == nil && ok && o.ok() {
			fmt.Printf("conformance: %s, %s: %s failed once and passed when run again (a flake): %s\n",
				set.Name, name, sc, strings.Join(col.Results[sc].Failures, "; "))
			col.Results[sc] = o
		}
	}
	return col
}

// modeServer is the go-sdk's server over Streamable HTTP, stateless or
// stateful.
func (h *harness) modeServer(stateless bool) target {
	return func(ctx context.Context, dir string) (string, func(), error) {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", port)
		p, err := start("everything-server", filepath.Join(dir, "server.log"),
			[]string{h.server, "-http", addr, fmt.Sprintf("-stateless=%v", stateless)}, nil)
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

// The README markers around the era tables (beside the 0.1.x suite's).
const (
	eraBeginMarker = "<!-- conformance-2026:begin (generated by make conformance-2026; DO NOT EDIT) -->\n"
	eraEndMarker   = "<!-- conformance-2026:end -->\n"
)

func writeEraTables(path, body string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i := bytes.Index(doc, []byte(eraBeginMarker))
	j := bytes.Index(doc, []byte(eraEndMarker))
	if i < 0 || j < i {
		return fmt.Errorf("the begin and end markers of the era tables (%q) are missing or out of order", strings.TrimSpace(eraBeginMarker))
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(eraBeginMarker)])
	out.WriteString(body)
	out.Write(doc[j:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// erasMode is -eras.
var erasMode bool
