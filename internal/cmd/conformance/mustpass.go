package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

// mustPassFile is mustpass.txt: the scenarios mcpkeep must pass though
// the server does not pass them directly (docs/design.md §24).
//
//go:embed mustpass.txt
var mustPassFile []byte

const mustPassName = "internal/cmd/conformance/mustpass.txt"

// mcpkeepColumns are the ids of the columns through mcpkeep (eraColumns).
var mcpkeepColumns = []string{"stdio", "url-stateful", "url-stateless", "proxy", replicasColumnID}

// mustPass is, per revision, per scenario, the columns that must pass it
// (nil: every column through mcpkeep).
type mustPass map[string]map[string][]string

// parseMustPass reads the list: a revision, a scenario and optional
// column ids a line; # comments and blank lines.
func parseMustPass(b []byte) (mustPass, error) {
	m := mustPass{}
	revs := map[string]bool{}
	for _, s := range requirementSets {
		revs[s.revision()] = true
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: want a revision and a scenario, got %q", mustPassName, n, line)
		}
		if !revs[f[0]] {
			return nil, fmt.Errorf("%s:%d: revision %q is none of the requirement sets' (%s)", mustPassName, n, f[0], strings.Join(sortedKeys(revs), ", "))
		}
		for _, c := range f[2:] {
			if !slices.Contains(mcpkeepColumns, c) {
				return nil, fmt.Errorf("%s:%d: column %q is none of %s", mustPassName, n, c, strings.Join(mcpkeepColumns, ", "))
			}
		}
		if m[f[0]] == nil {
			m[f[0]] = map[string][]string{}
		}
		if _, dup := m[f[0]][f[1]]; dup {
			return nil, fmt.Errorf("%s:%d: %s %s is listed twice", mustPassName, n, f[0], f[1])
		}
		m[f[0]][f[1]] = f[2:]
		if len(f) == 2 {
			m[f[0]][f[1]] = nil
		}
	}
	return m, sc.Err()
}

// of is the list of one revision.
func (m mustPass) of(rev string) map[string][]string { return m[rev] }

// unknown reports each listed scenario of rev that no column ran (a typo,
// or a scenario the suite dropped).
func (m mustPass) unknown(rev string, cols []column) []error {
	var errs []error
	for _, sc := range sortedKeys(m[rev]) {
		if !slices.ContainsFunc(cols, func(c column) bool { _, ok := c.Results[sc]; return ok }) {
			errs = append(errs, fmt.Errorf("%s %s: the suite ran no such scenario", rev, sc))
		}
	}
	return errs
}

// mustPasses reports whether must holds column id to scenario sc.
func mustPasses(must map[string][]string, sc, id string) bool {
	cols, ok := must[sc]
	return ok && (cols == nil || slices.Contains(cols, id))
}
