package config

import (
	"strings"
	"testing"
)

// "eras" (docs/design.md §24): "twin" or "shared" (the default); any other
// value is an error naming the key.
func TestConfigEras(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers": {
	    "a": {"command": "x"},
	    "b": {"command": "y", "eras": "shared"},
	    "c": {"command": "z", "eras": "twin"}
	  }}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	if a.TwinEras || b.TwinEras || !c.TwinEras {
		t.Errorf("twin eras: a %v, b %v, c %v; want false, false, true", a.TwinEras, b.TwinEras, c.TwinEras)
	}
	d := a
	d.TwinEras = true
	if !a.Equal(d) {
		t.Error("eras is part of Equal: a reload that changes it would restart the server's process")
	}
	for _, bad := range []struct{ in, want string }{
		{`{"mcpServers":{"a":{"command":"x","eras":"both"}}}`, `mcpServers.a.eras: must be "twin" or "shared", got "both"`},
		{`{"mcpServers":{"a":{"command":"x","eras":true}}}`, `mcpServers.a.eras`},
	} {
		_, _, err := Parse([]byte(bad.in), envOf(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want it to contain %q", bad.in, err, bad.want)
		}
	}
}
