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
)

// The client scenarios of a requirement set (-eras): every client
// scenario the set requires (the 2026-07-28 set's new ones too: request
// state, the standard and custom headers, json-schema preservation, the
// iss checks, resource mismatch, offline access, authorization-server
// migration), run at the set's wire with the go-sdk's client and through
// a Supervisor (internal/cmd/conformance-client), the latter held to the
// former. Those the go-sdk's baseline lists (mechanisms its client does
// not implement) are left out, as in the 0.1.x run.

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
	var run, skipped []string
	for _, sc := range requiredClientScenarios(list) {
		if base[sc] {
			skipped = append(skipped, sc)
		} else {
			run = append(run, sc)
		}
	}
	cols := []column{
		h.eraClientColumn(ctx, set, rev, "go-sdk client", h.client, run),
		h.eraClientColumn(ctx, set, rev, "mcpkeep Supervisor", h.adapter, run),
	}
	return cols, skipped, nil
}

// eraClientColumn runs scenarios with one client program at revision
// rev's wire. A WARNING fails a client scenario, as the suite judges it.
func (h *harness) eraClientColumn(ctx context.Context, set requirementSet, rev, name, program string, scenarios []string) column {
	dir := filepath.Join(h.work, slug(set.Name), "clients", slug(name))
	col := column{Name: name, Results: map[string]outcome{}}
	fmt.Printf("conformance: %s, client scenarios, %s\n", set.Name, name)
	for _, sc := range scenarios {
		col.Results[sc] = h.clientScenario(ctx, dir, program, sc, "--spec-version", rev)
	}
	return col
}
