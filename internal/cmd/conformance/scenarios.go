package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// modSDK is the go-sdk's module, whose conformance/baseline.yml lists the
// client scenarios its own client is known to fail.
const modSDK = "github.com/modelcontextprotocol/go-sdk"

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
