package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/tools"
)

func TestConfigFiltersMergeAndHostKeys(t *testing.T) {
	cfg, warns, err := Parse([]byte(`{
	  "tools": {"deny": ["delete_*"], "allow": ["*"]},
	  "prompts": {"deny": ["secret*"]},
	  "replaySafeCalls": false,
	  "mcpServers": {
	    "cline": {"command": "x", "disabledTools": ["write_file", "odd*name"], "excludeTools": ["move"]},
	    "gemini": {"command": "x", "includeTools": ["read_file"], "tools": {"allow": ["list_*"]}, "replaySafeCalls": true},
	    "plain": {"command": "x", "prompts": {"allow": ["greet"]}}
	  }}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	cline, gemini, plain := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	want := tools.Filter{Allow: []string{"*"}, Deny: []string{"delete_*", "write_file", `odd\*name`, "move"}}
	if !cline.Tools.Equal(want) {
		t.Errorf("cline tools %+v, want %+v", cline.Tools, want)
	}
	if cline.Tools.Admits("write_file") || !cline.Tools.Admits("oddXname") || cline.Tools.Admits("odd*name") || !cline.Tools.Admits("read") {
		t.Error("disabledTools names are exact names")
	}
	// The server's allow replaces the default's; includeTools joins it.
	if want := (tools.Filter{Allow: []string{"list_*", "read_file"}, Deny: []string{"delete_*"}}); !gemini.Tools.Equal(want) {
		t.Errorf("gemini tools %+v, want %+v", gemini.Tools, want)
	}
	if want := (tools.Filter{Allow: []string{"greet"}, Deny: []string{"secret*"}}); !plain.Prompts.Equal(want) {
		t.Errorf("plain prompts %+v", plain.Prompts)
	}
	if cline.ReplaySafeCalls || !gemini.ReplaySafeCalls {
		t.Error("replaySafeCalls: the server's wins over the top level's")
	}
	if p := plain.Policy(); p == nil || !p.Prompts.Equal(plain.Prompts) {
		t.Errorf("Policy %+v", p)
	}
	if cline.Equal(Server{}) || !cline.Equal(cline) {
		t.Error("Equal")
	}
	c2 := cline
	c2.Tools.Deny = c2.Tools.Deny[:1]
	if cline.Equal(c2) {
		t.Error("Equal ignores the filter: a changed filter would not restart the server")
	}
}

func TestConfigReplaySafeDefaultsOn(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Servers[0].ReplaySafeCalls || cfg.Servers[0].Policy() != nil {
		t.Errorf("%+v", cfg.Servers[0])
	}
}

func TestConfigToolOverrides(t *testing.T) {
	cfg, warns, err := Parse([]byte(`{"mcpServers":{"fs":{"command":"x",
	  "tools": {"deny": ["rm"]},
	  "toolOverrides": {"search": {"name": "find", "title": "Find", "description": "Finds."},
	                    "read": {"description": "Reads."},
	                    "rm": {"title": "gone"}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Servers[0].ToolOverrides
	if got["search"] != (tools.Override{Name: "find", Title: "Find", Description: "Finds."}) || got["read"].Description != "Reads." {
		t.Errorf("overrides %+v", got)
	}
	if p := warningPaths(warns); p != "mcpServers.fs.toolOverrides.rm" {
		t.Errorf("warnings %v", warns)
	}
}

func TestConfigPolicyErrors(t *testing.T) {
	long := strings.Repeat("n", 62)
	for _, tc := range []struct{ name, json, want string }{
		{"bad glob", `{"mcpServers":{"a":{"command":"x","tools":{"deny":["ok","[x"]}}}}`,
			`mcpServers.a.tools.deny[1]: invalid glob "[x"`},
		{"filter key", `{"tools":{"hide":["x"]},"mcpServers":{"a":{"command":"x"}}}`,
			"tools.hide: unknown key (filter keys: allow, deny)"},
		{"filter type", `{"mcpServers":{"a":{"command":"x","prompts":["x"]}}}`,
			"mcpServers.a.prompts: must be an object, got array"},
		{"host key type", `{"mcpServers":{"a":{"command":"x","disabledTools":"write"}}}`,
			"mcpServers.a.disabledTools: must be an array of strings, got string"},
		{"invalid name", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":"has space"}}}}}`,
			`mcpServers.a.toolOverrides.t.name: "has space" is not a valid tool name`},
		{"empty name", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":""}}}}}`,
			"mcpServers.a.toolOverrides.t.name: must not be empty"},
		{"too long", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":"` + long + `"}}}}}`,
			"mcpServers.a.toolOverrides.t.name: \"" + long + "\" makes the public name \"a__" + long + "\", longer than 64 characters"},
		{"two tools one name", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":"u"},"v":{"name":"u"}}}}}`,
			`mcpServers.a.toolOverrides.v.name: "u" is also given to tool "t" at mcpServers.a.toolOverrides.t.name: two tools, one name`},
		{"onto a kept name", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":"u"},"u":{"title":"U"}}}}}`,
			`mcpServers.a.toolOverrides.t.name: "u" is the name of the server's tool "u", which keeps it (mcpServers.a.toolOverrides.u): two tools, one name`},
		{"override key", `{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"label":"u"}}}}}`,
			"mcpServers.a.toolOverrides.t.label: unknown key (override keys: name, title, description)"},
		{"replay type", `{"replaySafeCalls":"yes","mcpServers":{"a":{"command":"x"}}}`,
			"replaySafeCalls: must be true or false, got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.json), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
	// A swap of two names is no collision.
	cfg, _, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x","toolOverrides":{"t":{"name":"u"},"u":{"name":"t"}}}}}`), nil)
	if err != nil || len(cfg.Servers[0].ToolOverrides) != 2 {
		t.Errorf("swap: %v", err)
	}
}

func TestConfigEmptyAllowWarns(t *testing.T) {
	_, warns, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x","tools":{"allow":[]}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warns, func(w Warning) bool {
		return w.Path == "mcpServers.a.tools.allow" && strings.Contains(w.Message, "admits everything")
	}) {
		t.Errorf("warnings %v", warns)
	}
}
