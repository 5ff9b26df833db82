//go:build unix

package transport_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

// TestStdioEnvIsAllowlisted (docs/design.md §8): a child inherits only the
// base variables (user, home, PATH, locale, proxies...) and its own Env,
// not mcpkeep's other variables, such as another server's secret;
// InheritEnv gives it everything.
func TestStdioEnvIsAllowlisted(t *testing.T) {
	t.Setenv("MCPKEEP_TEST_OTHER_SECRET", "s3cret")
	t.Setenv("LC_TIME", "C")
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	t.Setenv("BASH_FUNC_f%%", "() { :; }")
	for _, inherit := range []bool{false, true} {
		s := &transport.Stdio{
			Command:    "/bin/sh",
			Args:       []string{"-c", `env | grep -E '^(MCPKEEP_TEST|LC_TIME|HTTPS_PROXY|BASH_FUNC)' >&2`},
			Env:        map[string]string{"MCPKEEP_TEST_MINE": "x"},
			InheritEnv: inherit,
			StdinGrace: testStdinGrace, TermGrace: testTermGrace, KillGrace: testKillGrace,
		}
		g, _ := open(t, s)
		waitGone(t, g, s.TerminationWindow())
		env := strings.Split(g.Exit().StderrTail, "\n")
		has := func(kv string) bool { return slices.Contains(env, kv) }
		for _, kv := range []string{"MCPKEEP_TEST_MINE=x", "LC_TIME=C", "HTTPS_PROXY=http://proxy.example:3128"} {
			if !has(kv) {
				t.Errorf("inherit %v: %s missing from the child's environment %q", inherit, kv, env)
			}
		}
		if got := has("MCPKEEP_TEST_OTHER_SECRET=s3cret"); got != inherit {
			t.Errorf("inherit %v: the child has mcpkeep's other variable: %v", inherit, got)
		}
	}
}

func TestBaseEnv(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=x", "LC_ALL=C", "XDG_CACHE_HOME=/c",
		"no_proxy=localhost", "TERM=() { evil; }", "GITHUB_TOKEN=ghp", "LANG=C.UTF-8", "=weird"}
	got := transport.BaseEnv(in)
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "XDG_CACHE_HOME=/c", "no_proxy=localhost", "LANG=C.UTF-8"}
	if !slices.Equal(got, want) {
		t.Errorf("BaseEnv = %q, want %q", got, want)
	}
}
