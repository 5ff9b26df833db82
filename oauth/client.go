package oauth

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcpkeep/mcpkeep/transport"
)

// Client is a server's "oauth" block (docs/design.md §22): how mcpkeep
// identifies itself to the server's authorization server. The zero value
// ("oauth": true) registers a client dynamically (RFC 7591).
type Client struct {
	// ID is a client id registered beforehand; "" registers dynamically.
	ID string
	// SecretEnv names the environment variable holding ID's secret; ""
	// for a public client. The secret is read when it is needed and never
	// stored.
	SecretEnv string
	// Scopes replace the scopes the server's metadata asks for; nil keeps
	// those.
	Scopes []string
	// MetadataURL, when set, is the https URL of a Client ID Metadata
	// Document (SEP-991) describing mcpkeep as a client: an authorization
	// server that supports such documents takes the URL as the client id,
	// one that does not falls back to ID or to dynamic registration.
	MetadataURL string
	// CallbackPort is the loopback port of the redirect
	// (http://127.0.0.1:PORT/callback); 0 takes a free one, which only a
	// dynamically registered client can use.
	CallbackPort int
}

// Target is one server to sign in to: its name, its MCP endpoint and its
// client.
type Target struct {
	Server string
	URL    string
	Client Client
	// ConfigFile is the config file naming Server, when there is one: the
	// login command then names it (`auth login NAME` needs --config).
	ConfigFile string
	// ByURL: the server was given by its URL alone (`mcpkeep run --url`,
	// where Server is a name made from it): it signs in with
	// `auth login --url URL`, which stores the token where it looks.
	ByURL bool
}

// LoginCommand is the command that signs in to t: "mcpkeep auth login
// NAME --config FILE", or, for a server given by URL (`mcpkeep run
// --url`, or no name), "mcpkeep auth login --url URL". The URL is shown
// redacted (transport.RedactURL): a secret in it stays out of every
// message, and the person puts their own URL back.
func (t Target) LoginCommand() string {
	switch {
	case t.Server == "" || t.ByURL:
		return "mcpkeep auth login --url " + shellWord(transport.RedactURL(t.URL))
	case t.ConfigFile != "":
		return "mcpkeep auth login " + shellWord(t.Server) + " --config " + shellWord(t.ConfigFile)
	}
	return "mcpkeep auth login " + shellWord(t.Server)
}

// name is how messages name t: its name, else its URL redacted.
func (t Target) name() string {
	if t.Server == "" {
		return transport.RedactURL(t.URL)
	}
	return t.Server
}

// shellWord quotes s for a POSIX shell when it needs it, so a printed
// command can be pasted as it is.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// secret returns the configured client's secret from its variable.
func (c Client) secret(lookup func(string) (string, bool)) (string, error) {
	if c.SecretEnv == "" {
		return "", nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(c.SecretEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("oauth: client secret: $%s is not set", c.SecretEnv)
	}
	return v, nil
}
