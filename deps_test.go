package mcpkeep

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The library stays free of the SDKs a command or a package of its own
// wires (docs/design.md §27): OpenTelemetry, Prometheus, Graphviz.
var (
	libraryPackages = []string{".", "./proxy", "./fsm", "./transport", "./tools", "./backoff", "./config"}
	keptOut         = []string{"go.opentelemetry.io/", "github.com/prometheus/", "github.com/goccy/go-graphviz"}
)

func TestLibraryImportsNoTelemetrySDK(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	args := append([]string{"list", "-deps"}, libraryPackages...)
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		for _, bad := range keptOut {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("the library imports %s (kept out: docs/design.md §27)", dep)
			}
		}
	}
}

// The guard sees what it guards: otelkeep does import OpenTelemetry.
func TestDepsGuardSeesOTel(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gobin, "list", "-deps", "./otelkeep").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "go.opentelemetry.io/otel\n") {
		t.Errorf("go list -deps ./otelkeep does not list go.opentelemetry.io/otel")
	}
}
