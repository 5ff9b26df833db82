package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/proxy"
)

// TestReloadAddedOAuthServerSeesASignIn: a proxy started without any
// OAuth server watches the token store all the same, so one added by a
// SIGHUP reload, stopped for a sign-in, reconnects when `auth login`
// stores its token (issue 33 item 23, the suspected one; docs/design.md
// §22).
func TestReloadAddedOAuthServerSeesASignIn(t *testing.T) {
	t.Parallel()
	l, err := authfixture.Listen(authfixture.EchoServer(), false, authfixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tokens := t.TempDir()
	path := filepath.Join(t.TempDir(), "mcp.json")
	servers := map[string]any{"keep": fixtureServer(t, "normal")}
	write := func() {
		b, _ := json.Marshal(map[string]any{"mcpServers": servers})
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write()
	r := startListen(t, map[string]any{"mcpServers": servers}, []string{oauth.EnvTokenDir + "=" + tokens}, "--config", path)
	cs, err := r.connectAs("host", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r.waitReadyz(t, "keep established", 20*time.Millisecond, func(_ int, rep proxy.Readiness) bool {
		return stateOf(rep, "keep") == "established"
	})

	servers["remote"] = map[string]any{"url": l.URL, "oauth": true}
	write()
	if err := r.cmd.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.waitReadyz(t, "remote waits for a sign-in", 20*time.Millisecond, func(_ int, rep proxy.Readiness) bool {
		return stateOf(rep, "remote") == "exhausted"
	})
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	if _, err := oauth.Login(ctx, oauth.LoginOptions{Target: oauth.Target{Server: "remote", URL: l.URL},
		Store: &oauth.Store{Dir: tokens}, OpenBrowser: authfixture.Browse}); err != nil {
		t.Fatal(err)
	}
	r.waitReadyz(t, "remote reconnected after the sign-in", 20*time.Millisecond, func(_ int, rep proxy.Readiness) bool {
		return stateOf(rep, "remote") == "established"
	})
}
