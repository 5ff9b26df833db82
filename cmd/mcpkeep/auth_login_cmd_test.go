package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

// TestRunURLOAuthNamesTheLoginThatWorks: `run --url --oauth` without a
// token says to run `mcpkeep auth login --url URL` (a NAME would need a
// config file run has not got), with the URL's secrets redacted (issue 33
// items 22, 23).
func TestRunURLOAuthNamesTheLoginThatWorks(t *testing.T) {
	t.Setenv("MCPKEEP_TOKEN_DIR", t.TempDir())
	for _, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:1/mcp", "run: mcpkeep auth login --url http://127.0.0.1:1/mcp"},
		{"http://127.0.0.1:1/mcp?key=topsecret", "run: mcpkeep auth login --url 'http://127.0.0.1:1/mcp?key=***'"},
	} {
		cfg, err := runSpec{name: "remote", url: tc.url, oauth: true}.config()
		if err != nil {
			t.Fatal(err)
		}
		op, err := cfg.Servers[0].Opener(nil)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := op.(*transport.HTTP).OAuth.TokenSource(context.Background())
		if err == nil {
			_, err = ts.Token()
		}
		if !errors.Is(err, transport.ErrSignInRequired) || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "topsecret") {
			t.Errorf("%s: %v, want it to end %q", tc.url, err, tc.want)
		}
	}
}

// TestAuthStatusNamesTheConfigFile: a server of a config file that is not
// signed in is told `auth login NAME --config FILE`, the file absolute;
// its URL's secrets are not printed (issue 33 items 22, 23).
func TestAuthStatusNamesTheConfigFile(t *testing.T) {
	t.Setenv("MCPKEEP_TOKEN_DIR", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "my servers.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"remote": {"url": "http://127.0.0.1:1/mcp?key=topsecret", "oauth": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, out, errOut := runCLI("auth", "status", "--config", "my servers.json")
	want := "not signed in: run: mcpkeep auth login remote --config '" + file + "'"
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out+errOut, "topsecret") {
		t.Errorf("auth status: %d %q %q, want %q and no secret", code, out, errOut, want)
	}
}
