package main

import (
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
)

// TestAuthCommands: `mcpkeep auth login --url` signs in through the
// authorization-server fixture (the browser's part played by the
// fixture), `auth status` shows the token's expiry and never the token,
// `auth logout` forgets it.
func TestAuthCommands(t *testing.T) {
	t.Setenv("MCPKEEP_TOKEN_DIR", t.TempDir())
	l, err := authfixture.Listen(authfixture.EchoServer(), false, authfixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	old := openBrowser
	openBrowser = authfixture.Browse
	defer func() { openBrowser = old }()

	code, out, errOut := runCLI("auth", "login", "--url", l.URL)
	if code != 0 || !strings.Contains(out, "signed in; token expires") {
		t.Fatalf("auth login: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI("auth", "status", "--url", l.URL)
	if code != 0 || !strings.Contains(out, "signed in; token expires") {
		t.Errorf("auth status after login: %d %q", code, out)
	}
	for _, tok := range l.Issued() {
		if strings.Contains(out+errOut, tok) {
			t.Errorf("a token was printed: %q", tok)
		}
	}
	code, out, _ = runCLI("auth", "logout", "--url", l.URL)
	if code != 0 || !strings.Contains(out, "signed out") {
		t.Errorf("auth logout: %d %q", code, out)
	}
	code, out, _ = runCLI("auth", "status", "--url", l.URL)
	if code != 1 || !strings.Contains(out, "not signed in: run: mcpkeep auth login --url "+l.URL) {
		t.Errorf("auth status after logout: %d %q", code, out)
	}
	if code, _, errOut := runCLI("auth", "login"); code != 2 || !strings.Contains(errOut, "NAME") {
		t.Errorf("auth login without a target: %d %q", code, errOut)
	}
}
