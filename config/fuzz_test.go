package config

import (
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/mcpkeep/mcpkeep/tools"
)

// FuzzParse: any bytes give a config or *Error values, never a panic, the
// same way twice; what Parse accepts is usable as it stands (valid server
// names, one transport each, an http(s) URL with a host).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		designExample,
		`{"mcpServers":{}}`,
		`{"servers":{"a":{"type":"http","url":"http://h/mcp","headers":{"X":"${T}"}}}}`,
		`{"mcpServers":{"a":{"command":"x","args":["-y"],"env":{"K":"$K"},"cwd":"/"}},"reconnect":{"enabled":false}}`,
		`{"mcpServers":{"a":{"url":"http://user:p%zz@h/?api_key=SECRET"}}}`,
		`{"mcpServers":{"a":{"command":"x","reconnect":{"initialDelayMs":1,"maxDelayMs":2,"maxAttempts":0,"jitter":1}}}}`,
		`{"connectTimeoutMs":0,"mcpServers":{}}`,
		`{"mcpServers":{"a":{"command":"x","command":"y"}}}`,
		`{"mcpServers":{"my server":{"command":"x"}}}`,
		`{"mcpServers":{"a":{"command":"x","alwaysAllow":[],"disabled":true}}}`,
		"{\n  \"mcpServers\": {,}\n}",
		`[]`, ``, `null`, `{"mcpServers":{"a":{"url":"http://h","waitForReadyMs":1e400}}}`,
	} {
		f.Add([]byte(s))
	}
	lookup := envOf(map[string]string{"T": "t", "K": "k"})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, warns, err := Parse(data, lookup)
		cfg2, warns2, err2 := Parse(data, lookup)
		if !reflect.DeepEqual(cfg, cfg2) || !reflect.DeepEqual(warns, warns2) || (err == nil) != (err2 == nil) ||
			(err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two parses differ: %v / %v", err, err2)
		}
		if err != nil {
			if cfg != nil {
				t.Fatalf("a config and an error: %v", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			for _, e := range configErrors(err) {
				if e.Error() == "" {
					t.Fatal("an empty error")
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if err := tools.CheckServerName(s.Name); err != nil {
				t.Fatalf("accepted server name: %v", err)
			}
			if seen[s.Name] {
				t.Fatalf("server %q twice", s.Name)
			}
			seen[s.Name] = true
			switch s.Transport {
			case TransportStdio:
				if s.Command == "" || s.URL != "" {
					t.Fatalf("stdio server %+v", s)
				}
			case TransportHTTP:
				u, err := url.Parse(s.URL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || s.Command != "" {
					t.Fatalf("http server %+v (%v)", s, err)
				}
			default:
				t.Fatalf("server %q with transport %q", s.Name, s.Transport)
			}
			if s.ConnectTimeout <= 0 || s.WaitForReady < 0 {
				t.Fatalf("server %q timeouts %v %v", s.Name, s.ConnectTimeout, s.WaitForReady)
			}
			if _, err := s.Reconnect.Resolve(); err != nil {
				t.Fatalf("server %q policy: %v", s.Name, err)
			}
		}
	})
}
