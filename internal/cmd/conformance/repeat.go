package main

import (
	"fmt"
	"strings"
)

// Repetitions (-repeat N, make conformance CONFORMANCE_REPEAT=N): the
// server scenarios run N times through each mcpkeep target (the suite
// against the same running target each time, so the sessions of earlier
// runs are still open, as a host's would be), and a scenario that fails in
// any repetition fails the column: a flake through mcpkeep is a loss for
// the host that met it, and is not retried away (docs/design.md §12). The
// direct column, the reference, runs once and keeps its retry.

// merge folds the repetitions of one column into one verdict per scenario:
// the first failing repetition's, its failures marked with it, or the
// last passing (or skipped by the suite) one; a scenario missing from a
// repetition counts as failed in it.
func merge(reps []map[string]outcome) map[string]outcome {
	out := map[string]outcome{}
	if len(reps) == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, r := range reps {
		for sc := range r {
			seen[sc] = true
		}
	}
	for sc := range seen {
		for i, r := range reps {
			o, ok := r[sc]
			if !ok {
				o = outcome{Failed: 1, Failures: []string{"no result"}}
			}
			if o.ok() || o.skipped() {
				out[sc] = o
				continue
			}
			if len(reps) > 1 {
				o.Failures = marked(o.Failures, fmt.Sprintf("repetition %d of %d: ", i+1, len(reps)))
			}
			out[sc] = o
			break
		}
	}
	return out
}

func marked(failures []string, prefix string) []string {
	out := make([]string, len(failures))
	for i, f := range failures {
		out[i] = prefix + f
	}
	if len(out) == 0 {
		out = []string{strings.TrimSuffix(prefix, ": ") + ": no check passed"}
	}
	return out
}
