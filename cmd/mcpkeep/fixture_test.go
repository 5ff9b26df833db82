package main

import (
	"strings"
	"testing"
)

// TestFixtureHelpListsFeatures: `mcpkeep fixture --help` lists what the
// fixture serves (tools, prompts, resources) as well as its modes.
func TestFixtureHelpListsFeatures(t *testing.T) {
	code, out, errOut := runCLI("fixture", "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"Usage:\n  mcpkeep fixture [flags]", "--mode MODE",
		"Tools (faults):", "\n  crash ", "\n  grow ",
		"Tools (features):", "\n  bump ", "Tools (hostile):", "\n  storm {count, rate} ", "\n  deaf ", "\n  add-resource {uri} ", "\n  add-prompt {name} ", "\n  subscriptions {min} ",
		"\n  log {level, text} ", "\n  log-all ", "\n  slow {steps, ms} ", "\n  cancelled {min} ",
		"\n  sample {prompt} ", "\n  elicit {message} ", "\n  roots ", "\n  roots-changed {min} ",
		"Prompts:", "\n  greet {name, style?} ", "\n  plain ",
		"Resources (text/plain):", "fixture://static/hello", "fixture://static/pid", "fixture://static/counter", "fixture://item/{id}",
		"Modes (--mode):", "\n  normal ", "\n  hang-init ", "\n  exit-after=D ", "\n  garbage ", "\n  ignore-term ", "\n  grandchild ", "\n  silent=METHOD ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("fixture --help lacks %q", want)
		}
	}
}
