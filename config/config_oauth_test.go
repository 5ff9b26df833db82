package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/transport"
)

// TestOAuthKey: "oauth" on a url server, as true or as a client block,
// becomes Server.OAuth, its oauth.Target, and a transport.HTTP that signs
// in with the token store's handler (docs/design.md §22).
func TestOAuthKey(t *testing.T) {
	t.Setenv(oauth.EnvTokenDir, t.TempDir())
	cfg, warns, err := Parse([]byte(`{"mcpServers":{
	  "dyn":{"url":"https://a.example/mcp","oauth":true},
	  "pre":{"url":"https://b.example/mcp","oauth":{"clientId":"cid","clientSecretEnv":"CS","scopes":["read","write"],"callbackPort":8765,"clientMetadataUrl":"https://mcpkeep.example/client.json"}},
	  "off":{"url":"https://c.example/mcp","oauth":false}}}`), envOf(map[string]string{"CS": "x"}))
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	dyn, pre, off := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	if dyn.OAuth == nil || !dyn.OAuth.equal(&OAuth{}) || off.OAuth != nil {
		t.Fatalf("dyn %+v, off %+v", dyn.OAuth, off.OAuth)
	}
	tg, ok := pre.Target()
	want := oauth.Target{Server: "pre", URL: "https://b.example/mcp", Client: oauth.Client{ID: "cid", SecretEnv: "CS", Scopes: []string{"read", "write"}, CallbackPort: 8765}}
	if !ok || tg.Server != want.Server || tg.URL != want.URL || tg.Client.ID != "cid" || tg.Client.SecretEnv != "CS" ||
		!slices.Equal(tg.Client.Scopes, want.Client.Scopes) || tg.Client.CallbackPort != 8765 ||
		tg.Client.MetadataURL != "https://mcpkeep.example/client.json" {
		t.Fatalf("Target = %+v, %v", tg, ok)
	}
	for _, s := range []Server{dyn, pre} {
		op, err := s.Opener(nil)
		if err != nil {
			t.Fatal(err)
		}
		if h := op.(*transport.HTTP); h.OAuth == nil {
			t.Errorf("%s: transport without OAuth handler", s.Name)
		}
	}
	if op, _ := off.Opener(nil); op.(*transport.HTTP).OAuth != nil {
		t.Error(`"oauth": false got a handler`)
	}
	changed := pre
	changed.OAuth = &OAuth{ClientID: "other"}
	if pre.Equal(changed) || !pre.Equal(pre) {
		t.Error("Equal ignores oauth")
	}
}

func TestOAuthKeyErrors(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"stdio", `{"mcpServers":{"a":{"command":"x","oauth":true}}}`, "mcpServers.a.oauth: only for url servers"},
		{"type", `{"mcpServers":{"a":{"url":"http://h","oauth":"yes"}}}`, "mcpServers.a.oauth: must be true, false or an object"},
		{"unknown", `{"mcpServers":{"a":{"url":"http://h","oauth":{"clientSecret":"s"}}}}`, "mcpServers.a.oauth.clientSecret: unknown key (oauth keys: clientId, clientSecretEnv, scopes, callbackPort, clientMetadataUrl)"},
		{"empty id", `{"mcpServers":{"a":{"url":"http://h","oauth":{"clientId":""}}}}`, "mcpServers.a.oauth.clientId: must not be empty"},
		{"secret env", `{"mcpServers":{"a":{"url":"http://h","oauth":{"clientId":"c","clientSecretEnv":"${S}"}}}}`, "mcpServers.a.oauth.clientSecretEnv: must name an environment variable"},
		{"secret without id", `{"mcpServers":{"a":{"url":"http://h","oauth":{"clientSecretEnv":"S"}}}}`, "mcpServers.a.oauth.clientSecretEnv: needs clientId"},
		{"scope", `{"mcpServers":{"a":{"url":"http://h","oauth":{"scopes":["a b"]}}}}`, "mcpServers.a.oauth.scopes[0]: is not a valid scope"},
		{"port", `{"mcpServers":{"a":{"url":"http://h","oauth":{"callbackPort":70000}}}}`, "mcpServers.a.oauth.callbackPort: must be <= 65535"},
		{"metadata url", `{"mcpServers":{"a":{"url":"http://h","oauth":{"clientMetadataUrl":"http://x/c.json"}}}}`, "mcpServers.a.oauth.clientMetadataUrl: must be an https URL of a client metadata document"},
		{"both", `{"mcpServers":{"a":{"url":"http://h","oauth":true,"headers":{"authorization":"Bearer x"}}}}`, "mcpServers.a.headers.authorization: conflicts with oauth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.json), envOf(map[string]string{"S": "x"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
	_, warns, err := Parse([]byte(`{"mcpServers":{"a":{"url":"http://h","oauth":{"clientId":"c","clientSecretEnv":"UNSET"}}}}`), envOf(nil))
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0].String(), "$UNSET is not set") {
		t.Errorf("unset secret variable: %v %v", err, warns)
	}
}
