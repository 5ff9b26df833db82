package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// An outcome is one scenario's verdict in one mode, from the suite's
// checks.json: it passes when no check is a FAILURE (the suite's own
// rule; WARNING and INFO checks do not fail it).
type outcome struct {
	Passed, Failed int
	// Failures are the failed checks, "id: message", for the report.
	Failures []string
}

func (o outcome) ok() bool { return o.Failed == 0 && o.Passed > 0 }

// check is the part of a suite check the comparison reads.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// resultDir is the suite's name of one scenario's result directory,
// "<prefix>-<scenario>-<ISO time with : and . as ->" (its -o option).
var resultDir = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every scenario's checks.json under dir, the suite's
// -o directory of one run.
func readResults(dir string) (map[string]outcome, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]outcome{}
	for _, e := range ents {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", m[1], err)
		}
		o, err := judge(b)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %s: %w", m[1], filepath.Join(e.Name(), "checks.json"), err)
		}
		out[m[1]] = o
	}
	return out, nil
}

func judge(checksJSON []byte) (outcome, error) {
	var checks []check
	if err := json.Unmarshal(checksJSON, &checks); err != nil {
		return outcome{}, err
	}
	var o outcome
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			o.Passed++
		case "FAILURE":
			o.Failed++
			o.Failures = append(o.Failures, c.ID+": "+c.ErrorMessage)
		}
	}
	return o, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
