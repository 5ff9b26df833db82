package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/oauth"
)

// The suite's auth/* scenarios guard a tool server with an authorization
// server that approves at once. The adapter plays both mcpkeep and the
// person in front of it: it signs in with oauth.Login (as `mcpkeep auth
// login` does), then lists the tools and calls test-tool through a
// Supervisor whose transport signs requests with an oauth.Handler over
// the same store, as the go-sdk's everything-client does with its own
// handler.

// authTool is the tool every auth scenario's server offers.
const authTool = "test-tool"

// maxLogins bounds the person's sign-ins: the first, and one more when
// mcpkeep says a sign-in is required (a server stepping up its scopes);
// a server that still refuses is reported (auth/scope-retry-limit wants
// at most three authorization requests).
const maxLogins = 2

// metadataURL is the client's Client ID Metadata Document, the URL the
// go-sdk's everything-client gives (the suite's authorization server
// checks the client id, it does not fetch it).
const metadataURL = "https://conformance-test.local/client-metadata.json"

// secretEnv is where the adapter's LookupEnv finds a preregistered
// client's secret (the suite passes it in MCP_CONFORMANCE_CONTEXT).
const secretEnv = "CONFORMANCE_CLIENT_SECRET"

// suiteContext is the part of MCP_CONFORMANCE_CONTEXT the auth scenarios
// use: a preregistered client (auth/pre-registration).
type suiteContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

func readSuiteContext() (suiteContext, error) {
	var c suiteContext
	raw := os.Getenv("MCP_CONFORMANCE_CONTEXT")
	if raw == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	return c, nil
}

// runAuth signs in to url and then runs the scenario's calls through a
// Supervisor signed in with the stored token.
func runAuth(ctx context.Context, url string) error {
	sc, err := readSuiteContext()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mcpkeep-conformance-tokens-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store := &oauth.Store{Dir: dir}
	target := oauth.Target{Server: "conformance", URL: url, Client: oauth.Client{MetadataURL: metadataURL}}
	if sc.ClientID != "" {
		target.Client.ID = sc.ClientID
		if sc.ClientSecret != "" {
			target.Client.SecretEnv = secretEnv
		}
	}
	lookup := func(k string) (string, bool) {
		if k == secretEnv && sc.ClientSecret != "" {
			return sc.ClientSecret, true
		}
		return "", false
	}
	login := func() error {
		_, err := oauth.Login(ctx, oauth.LoginOptions{
			Target: target, Store: store, Out: os.Stderr, OpenBrowser: browse, LookupEnv: lookup,
		})
		return err
	}
	if err := login(); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	h := oauth.NewHandler(oauth.HandlerOptions{Target: target, Store: store, LookupEnv: lookup})
	for logins := 1; ; logins++ {
		err := run(ctx, url, scenario{tool: authTool, args: map[string]any{}}, h)
		if !errors.Is(err, mcpkeep.ErrSignInRequired) || logins == maxLogins {
			return err
		}
		// What a person does when mcpkeep says "run: mcpkeep auth login":
		// the store remembers the scopes a server stepped up to.
		fmt.Fprintf(os.Stderr, "%v; signing in again\n", err)
		if err := login(); err != nil {
			return fmt.Errorf("login again: %w", err)
		}
	}
}

// browse is the person's browser: it follows the authorization server's
// redirects to Login's loopback callback (the suite's authorization
// server approves at once).
func browse(authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// isAuth tells the suite's auth scenarios.
func isAuth(name string) bool { return strings.HasPrefix(name, "auth/") }
