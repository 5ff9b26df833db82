package config

import (
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

func TestConfigInheritEnv(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers": {
	    "a": {"command": "x", "inheritEnv": true},
	    "b": {"command": "y"}}}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	if !a.InheritEnv || b.InheritEnv {
		t.Errorf("inheritEnv: a %v, b %v", a.InheritEnv, b.InheritEnv)
	}
	c := a
	c.InheritEnv = false
	if a.Equal(c) {
		t.Error("inheritEnv is not part of Equal")
	}
	o, err := a.Opener(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := o.(*transport.Stdio); !ok || !st.InheritEnv {
		t.Errorf("Opener = %#v, want a Stdio with InheritEnv", o)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"mcpServers":{"a":{"url":"https://h/mcp","inheritEnv":true}}}`, `mcpServers.a.inheritEnv: only for stdio servers`},
		{`{"mcpServers":{"a":{"command":"x","inheritEnv":"yes"}}}`, `mcpServers.a.inheritEnv`},
		{`{"inheritEnv":true,"mcpServers":{"a":{"command":"x"}}}`, `inheritEnv`},
	} {
		_, _, err := Parse([]byte(bad.in), envOf(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want it to name %q", bad.in, err, bad.want)
		}
	}
}
