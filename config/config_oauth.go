package config

import (
	"net/url"
	"strings"

	"github.com/mcpkeep/mcpkeep/oauth"
)

// OAuth is a url server's "oauth" block (docs/design.md §22): `true` signs
// in with a dynamically registered client, an object names a registered
// one. The token lives in the token store (package oauth), never here.
type OAuth struct {
	// ClientID is a client registered beforehand; "" registers one
	// dynamically (RFC 7591).
	ClientID string
	// ClientSecretEnv names the environment variable holding the client's
	// secret ("clientSecretEnv"); "" for a public client.
	ClientSecretEnv string
	// Scopes replace the scopes the server asks for; nil keeps those.
	Scopes []string
	// CallbackPort is the loopback port of `mcpkeep auth login`'s
	// redirect; 0 takes a free one (dynamic registration only).
	CallbackPort int
	// ClientMetadataURL ("clientMetadataUrl") is an https URL of a
	// Client ID Metadata Document naming mcpkeep's client, used where the
	// authorization server supports them.
	ClientMetadataURL string
}

const oauthKeys = "clientId, clientSecretEnv, scopes, callbackPort, clientMetadataUrl"

// oauthBlock parses "oauth": true, false (no sign-in) or an object.
func (p *parser) oauthBlock(m member) (*OAuth, error) {
	if kindOf(m.raw) == "boolean" {
		on, err := decodeBool(m)
		if err != nil || !on {
			return nil, err
		}
		return &OAuth{}, nil
	}
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		return nil, ruleError(m.path, "must be true, false or an object (keys: %s), got %s", oauthKeys, kindOf(m.raw))
	}
	o := &OAuth{}
	for _, f := range members {
		if f.null() {
			continue
		}
		var err error
		switch f.key {
		case "clientId":
			o.ClientID, err = decodeString(f)
			if err == nil && strings.TrimSpace(o.ClientID) == "" {
				err = ruleError(f.path, "must not be empty (omit it to register a client dynamically)")
			}
		case "clientSecretEnv":
			o.ClientSecretEnv, err = decodeString(f)
			if err == nil {
				if o.ClientSecretEnv == "" || strings.ContainsAny(o.ClientSecretEnv, "=$\x00 ") {
					err = ruleError(f.path, "must name an environment variable (the name, not ${...} and not the secret)")
				} else if _, ok := p.lookup(o.ClientSecretEnv); !ok {
					p.warn(f.path, "$%s is not set in the environment; sign-in and refresh will fail", o.ClientSecretEnv)
				}
			}
		case "scopes":
			o.Scopes, err = decodeStrings(f)
			for i, s := range o.Scopes {
				if err == nil && (s == "" || strings.ContainsAny(s, " \t\"\\")) {
					err = ruleError(f.path.index(i), "is not a valid scope")
				}
			}
		case "clientMetadataUrl":
			o.ClientMetadataURL, err = decodeString(f)
			if u, perr := url.Parse(o.ClientMetadataURL); err == nil && (perr != nil || u.Scheme != "https" || u.Host == "") {
				err = ruleError(f.path, "must be an https URL of a client metadata document")
			}
		case "callbackPort":
			var n int64
			n, err = decodeInt(f, 1, 65535)
			o.CallbackPort = int(n)
		default:
			err = ruleError(f.path, "unknown key (oauth keys: %s)", oauthKeys)
		}
		if err != nil {
			p.fail(err)
		}
	}
	if o.ClientSecretEnv != "" && o.ClientID == "" {
		p.fail(ruleError(m.path.key("clientSecretEnv"), "needs clientId (a dynamically registered client gets its secret from the registration)"))
	}
	return o, nil
}

// Target is what package oauth needs to sign in to s; ok is false for a
// server without "oauth".
func (s Server) Target() (t oauth.Target, ok bool) {
	if s.OAuth == nil {
		return oauth.Target{}, false
	}
	return oauth.Target{Server: s.Name, URL: s.URL, ConfigFile: s.File, ByURL: s.ByURL, Client: oauth.Client{
		ID: s.OAuth.ClientID, SecretEnv: s.OAuth.ClientSecretEnv,
		Scopes: append([]string(nil), s.OAuth.Scopes...), CallbackPort: s.OAuth.CallbackPort,
		MetadataURL: s.OAuth.ClientMetadataURL,
	}}, true
}

func (a *OAuth) equal(b *OAuth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ClientID == b.ClientID && a.ClientSecretEnv == b.ClientSecretEnv &&
		equalStrings(a.Scopes, b.Scopes) && a.CallbackPort == b.CallbackPort && a.ClientMetadataURL == b.ClientMetadataURL
}
