package oauth

import (
	"fmt"
	"os"
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
}

// LoginCommand is the command that signs in to t: "mcpkeep auth login
// NAME", or, for a server without a name (`mcpkeep run --url`),
// "mcpkeep auth login --url URL".
func (t Target) LoginCommand() string {
	if t.Server == "" {
		return "mcpkeep auth login --url " + t.URL
	}
	return "mcpkeep auth login " + t.Server
}

func (t Target) name() string {
	if t.Server == "" {
		return t.URL
	}
	return t.Server
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
