package main

import (
	"regexp"
	"testing"
)

func TestVersion(t *testing.T) {
	code, out, errOut := runCLI("version")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	// A test binary has no module version, so the default applies.
	if !regexp.MustCompile(`^mcpkeep dev go1\.\S+ \w+/\w+\n$`).MatchString(out) {
		t.Errorf("version printed %q", out)
	}
}

func TestVersionFromLdflags(t *testing.T) {
	old := version
	version = "v1.2.3"
	defer func() { version = old }()
	_, out, _ := runCLI("version")
	if !regexp.MustCompile(`^mcpkeep v1\.2\.3 `).MatchString(out) {
		t.Errorf("version printed %q, want the -ldflags value", out)
	}
}
