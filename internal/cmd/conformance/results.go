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
// rule for server scenarios; WARNING and INFO checks do not fail it, but
// the client scenarios count WARNINGs too, see clients). One whose every
// check the suite SKIPPED is neither passed nor failed (skipped).
type outcome struct {
	Passed, Failed int
	Skipped        int // SKIPPED checks
	// Failures are the failed checks, "id: message", for the report;
	// Warnings the WARNING checks, "id: warning: description".
	Failures, Warnings []string
}

func (o outcome) ok() bool { return o.Failed == 0 && o.Passed > 0 }

// skipped: the suite skipped every check of the scenario (INFO checks
// aside, which judge nothing), as it does with one whose harness awaits a
// rewrite; it counts apart in the tables (compare.go). A SKIPPED beside a
// FAILURE or a WARNING is no skip: it fails.
func (o outcome) skipped() bool {
	return o.Skipped > 0 && o.Passed == 0 && o.Failed == 0 && len(o.Warnings) == 0
}

// check is the part of a suite check the comparison reads.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
	Description  string `json:"description"`
}

// resultDir is the suite's name of one scenario's result directory,
// "<prefix>-<scenario>-<ISO time with : and . as ->" (its -o option).
var resultDir = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every scenario's checks.json under dir, the suite's
// -o directory of one run. A scenario named with a slash (auth/x) has its
// directory in a subdirectory (auth/x-<time>).
func readResults(dir string) (map[string]outcome, error) {
	out := map[string]outcome{}
	return out, readResultsInto(out, dir, "")
}

func readResultsInto(out map[string]outcome, dir, prefix string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "checks.json")); prefix == "" && err != nil {
				if err := readResultsInto(out, filepath.Join(dir, e.Name()), e.Name()+"/"); err != nil {
					return err
				}
			}
			continue
		}
		m[1] = prefix + m[1]
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return fmt.Errorf("scenario %s: %w", m[1], err)
		}
		o, err := judge(b)
		if err != nil {
			return fmt.Errorf("scenario %s: %s: %w", m[1], filepath.Join(prefix+e.Name(), "checks.json"), err)
		}
		out[m[1]] = o
	}
	return nil
}

// strict is o as the suite judges a client scenario: a WARNING fails it.
func strict(o outcome) outcome {
	o.Failed += len(o.Warnings)
	o.Failures = append(o.Failures, o.Warnings...)
	o.Warnings = nil
	return o
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
		case "WARNING":
			o.Warnings = append(o.Warnings, c.ID+": warning: "+c.Description)
		case "SKIPPED":
			o.Skipped++
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
