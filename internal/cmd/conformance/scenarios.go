package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// baseClientScenarios are the client scenarios that need no sign-in; the
// suite's auth/* scenarios are added from its own list (authScenarios).
var baseClientScenarios = []string{"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults"}

// modSDK is the go-sdk's module, whose conformance/baseline.yml lists the
// client scenarios its own client is known to fail.
const modSDK = "github.com/modelcontextprotocol/go-sdk"

// authScenarios are the suite's client scenarios named auth/*, in its
// order, from the output of its list command.
func authScenarios(listOutput []byte) []string {
	var out []string
	inClient := false
	sc := bufio.NewScanner(bytes.NewReader(listOutput))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Client scenarios") {
			inClient = true
			continue
		}
		if !inClient || !strings.HasPrefix(strings.TrimSpace(line), "- ") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), " ")
		if strings.HasPrefix(name, "auth/") {
			out = append(out, name)
		}
	}
	return out
}

// baselineClient reads the client section of the go-sdk's baseline.yml:
// a list of scenario names, one "  - name" a line (comments and blank
// lines between them).
func baselineClient(yml []byte) map[string]bool {
	out := map[string]bool{}
	inClient := false
	sc := bufio.NewScanner(bytes.NewReader(yml))
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "-"):
			inClient = t == "client:"
		case inClient && strings.HasPrefix(t, "- "):
			out[strings.TrimSpace(strings.TrimPrefix(t, "- "))] = true
		}
	}
	return out
}

// clientScenarios are the client scenarios to run, and the suite's auth
// scenarios left out because the go-sdk's baseline lists them (mechanisms
// its client does not implement, so no comparison is possible).
func (h *harness) clientScenarios(ctx context.Context) (run, skipped []string, err error) {
	list, err := h.suiteOutput(ctx, "list")
	if err != nil {
		return nil, nil, fmt.Errorf("the suite's list: %w", err)
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
	run = append(run, baseClientScenarios...)
	for _, sc := range authScenarios(list) {
		if base[sc] {
			skipped = append(skipped, sc)
		} else {
			run = append(run, sc)
		}
	}
	return run, skipped, nil
}

// suiteOutput runs the suite's CLI with args and returns its output.
func (h *harness) suiteOutput(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.node, append([]string{h.suite}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
