package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The client scenarios of a requirement set: every client
// scenario the set requires (the 2026-07-28 set's new ones too: request
// state, the standard and custom headers, json-schema preservation, the
// iss checks, resource mismatch, offline access, authorization-server
// migration), run at the set's wire with the go-sdk's client and through
// a Supervisor (internal/cmd/conformance-client), the latter held to the
// former; the oldest set adds the scenarios of earlier versions that no
// set requires (earlierClientScenarios). Those the go-sdk's baseline lists
// (mechanisms its client does not implement) are left out.

// requiredClientScenarios are the client scenarios of the output of
// `list --client --requirements R`: the "- name" lines of its "Client
// scenarios" section, up to the blank line that ends it.
func requiredClientScenarios(listOutput []byte) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(listOutput))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(t, "Client scenarios"):
			in = true
		case in && t == "":
			return out
		case in && strings.HasPrefix(t, "- "):
			name, _, _ := strings.Cut(strings.TrimPrefix(t, "- "), " ")
			out = append(out, name)
		}
	}
	return out
}

// revision is the spec revision of a set (its --requirements value;
// the 2025-11-25 active suite's is 2025-11-25).
func (s requirementSet) revision() string {
	if i := slices.Index(s.Args, "--requirements"); i >= 0 && i+1 < len(s.Args) {
		return s.Args[i+1]
	}
	return "2025-11-25"
}

// earlierClientScenarios are the client scenarios of the output of
// `list --client` (every scenario, each with its spec versions in
// brackets) that only spec versions before rev have, each with the last
// of them: no requirement set runs those (the 2025-03-26 sign-in
// fallbacks), so the oldest set runs them at their own version.
func earlierClientScenarios(listOutput []byte, rev string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(listOutput))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		name, tags, ok := strings.Cut(strings.TrimPrefix(t, "- "), " [")
		if !strings.HasPrefix(t, "- ") || !ok || !strings.HasSuffix(tags, "]") {
			continue
		}
		last := ""
		for _, v := range strings.Split(strings.TrimSuffix(tags, "]"), ",") {
			if !isDate(v) || v >= rev {
				last = ""
				break
			}
			last = max(last, v)
		}
		if last != "" {
			out[name] = last
		}
	}
	return out
}

// isDate reports whether v is a spec version (YYYY-MM-DD), not a tag
// such as "extension".
func isDate(v string) bool {
	if len(v) != len("2025-11-25") {
		return false
	}
	for i, r := range v {
		if i == 4 || i == 7 {
			if r != '-' {
				return false
			}
		} else if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// eraClients runs a set's client scenarios with both client programs and
// returns the two columns and the scenarios left out.
func (h *harness) eraClients(ctx context.Context, set requirementSet) ([]column, []string, error) {
	rev := set.revision()
	list, err := h.suiteOutput(ctx, "list", "--client", "--requirements", rev)
	if err != nil {
		return nil, nil, fmt.Errorf("the suite's client list for %s: %w", rev, err)
	}
	dir, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", modSDK).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -m %s: %w", modSDK, err)
	}
	yml, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "conformance", "baseline.yml"))
	if err != nil {
		return nil, nil, fmt.Errorf("the go-sdk's baseline: %w", err)
	}
	base := baselineClient(yml)
	versions := map[string]string{}
	for _, sc := range requiredClientScenarios(list) {
		versions[sc] = rev
	}
	if rev == oldestRevision() {
		all, err := h.suiteOutput(ctx, "list", "--client")
		if err != nil {
			return nil, nil, fmt.Errorf("the suite's client list: %w", err)
		}
		for sc, v := range earlierClientScenarios(all, rev) {
			versions[sc] = v
		}
	}
	var run, skipped []string
	for _, sc := range sortedKeys(versions) {
		if base[sc] {
			skipped = append(skipped, sc)
		} else {
			run = append(run, sc)
		}
	}
	var cols [2]column
	var wg sync.WaitGroup
	wg.Go(func() { cols[0] = h.eraClientColumn(ctx, set, "go-sdk client", h.client, run, versions) })
	wg.Go(func() { cols[1] = h.eraClientColumn(ctx, set, "mcpkeep Supervisor", h.adapter, run, versions) })
	wg.Wait()
	return cols[:], skipped, nil
}

// oldestRevision is the revision of the first requirement set.
func oldestRevision() string { return requirementSets[0].revision() }

// eraClientColumn runs scenarios with one client program, each at its
// version's wire (versions), -jobs at a time. A WARNING fails a client
// scenario, as the suite judges it.
func (h *harness) eraClientColumn(ctx context.Context, set requirementSet, name, program string, scenarios []string, versions map[string]string) column {
	dir := filepath.Join(h.work, slug(set.Name), "clients", slug(name))
	col := column{Name: name, Results: map[string]outcome{}}
	fmt.Printf("conformance: %s, client scenarios, %s\n", set.Name, name)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		wg.Go(func() {
			o := h.clientScenario(ctx, dir, program, sc, "--spec-version", versions[sc])
			mu.Lock()
			col.Results[sc] = o
			mu.Unlock()
		})
	}
	wg.Wait()
	return col
}
