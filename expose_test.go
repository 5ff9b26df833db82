package mcpkeep

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/mcpkeep/mcpkeep/tools"
)

// A supervisor's Expose policy applies to every generation's listing and
// to Call: a hidden tool is neither registered nor callable, a renamed one
// is registered under its new public name; an allow pattern that matches
// nothing is logged once per generation.
func TestExposeFiltersListingAndCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *Options) {
			o.Expose = &tools.Policy{
				Tools:     tools.Filter{Allow: []string{"ec*", "hang", "nope*"}, Deny: []string{"hang"}},
				Overrides: map[string]tools.Override{"echo": {Name: "say"}},
			}
		}, "echo", "hang", "other")
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		for gen := uint64(1); gen <= 2; gen++ {
			if got := h.registered(); !slices.Equal(got, []string{"srv__say"}) {
				t.Fatalf("gen %d registered %v", gen, got)
			}
			if _, err := h.sup.Call(context.Background(), "hang", nil, nil); !errors.Is(err, ErrUnknownTool) {
				t.Fatalf("Call(hang) = %v, want ErrUnknownTool", err)
			}
			if _, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil); err != nil {
				t.Fatalf("Call(echo): %v", err)
			}
			if logs := h.logsNamed("filter matches nothing"); len(logs) != int(gen) || logs[gen-1].Attrs["allow"] != "nope*" {
				t.Fatalf("gen %d logs %+v", gen, logs)
			}
			h.mem.Gen(gen).Kill()
			h.settle()
			h.advance(testPolicy.InitialDelay)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
