package config

import (
	"strings"
	"testing"
	"time"
)

func TestConfigStartAndIdleStop(t *testing.T) {
	cfg, _, err := Parse([]byte(`{
	  "start": "lazy", "idleStopMs": 60000,
	  "mcpServers": {
	    "a": {"command": "x"},
	    "b": {"command": "y", "start": "eager", "idleStopMs": 5000}
	  }}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	if !a.Lazy || a.IdleStop != time.Minute || a.StartMode() != "lazy" {
		t.Errorf("a: lazy %v idle %v", a.Lazy, a.IdleStop)
	}
	if b.Lazy || b.IdleStop != 5*time.Second || b.StartMode() != "eager" {
		t.Errorf("b: lazy %v idle %v", b.Lazy, b.IdleStop)
	}
	c := a
	c.Lazy = false
	if a.Equal(c) {
		t.Error("the start mode is not part of Equal")
	}
	c = a
	c.IdleStop = time.Second
	if a.Equal(c) {
		t.Error("the idle stop is not part of Equal")
	}
	for _, bad := range []struct{ in, want string }{
		{`{"mcpServers":{"a":{"command":"x","start":"later"}}}`, `mcpServers.a.start: must be "eager" or "lazy", got "later"`},
		{`{"start":1,"mcpServers":{"a":{"command":"x"}}}`, `start`},
		{`{"mcpServers":{"a":{"command":"x","idleStopMs":0}}}`, `mcpServers.a.idleStopMs: must be > 0`},
	} {
		_, _, err := Parse([]byte(bad.in), envOf(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want %q", bad.in, err, bad.want)
		}
	}
}
