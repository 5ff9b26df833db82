package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

func TestConfigProbe(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers": {
	    "a": {"url": "https://example.com/mcp", "probeIntervalMs": 30000, "probeTimeoutMs": 2000, "probeFailures": 3},
	    "b": {"url": "https://example.com/mcp"}
	  }}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	if want := (Probe{Interval: 30 * time.Second, Timeout: 2 * time.Second, Failures: 3}); a.Probe != want {
		t.Errorf("a.Probe = %+v; want %+v", a.Probe, want)
	}
	if b.Probe != (Probe{}) {
		t.Errorf("b.Probe = %+v; want the defaults (zero)", b.Probe)
	}
	if a.Equal(b) {
		t.Error("the probe is not part of Equal")
	}
	op, err := a.Opener(nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := op.(*transport.HTTP); h.ProbeInterval != 30*time.Second || h.ProbeTimeout != 2*time.Second || h.ProbeFailures != 3 {
		t.Errorf("the opener's probe: %v %v %d", h.ProbeInterval, h.ProbeTimeout, h.ProbeFailures)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"mcpServers":{"a":{"url":"http://h/mcp","probeIntervalMs":50}}}`, `mcpServers.a.probeIntervalMs: must be between 100 and 3600000 (100ms to 1h0m0s), got 50`},
		{`{"mcpServers":{"a":{"url":"http://h/mcp","probeTimeoutMs":600000}}}`, `mcpServers.a.probeTimeoutMs: must be between 100 and 300000`},
		{`{"mcpServers":{"a":{"url":"http://h/mcp","probeFailures":0}}}`, `mcpServers.a.probeFailures`},
		{`{"mcpServers":{"a":{"url":"http://h/mcp","probeIntervalMs":0}}}`, `mcpServers.a.probeIntervalMs`},
		{`{"mcpServers":{"a":{"command":"x","probeFailures":2}}}`, `mcpServers.a.probeFailures: only for url servers`},
	} {
		_, _, err := Parse([]byte(bad.in), envOf(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v; want %q", bad.in, err, bad.want)
		}
	}
}
