package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// designExample is docs/design.md §11's file.
const designExample = `{
  "reconnect": {"initialDelayMs": 500, "maxDelayMs": 30000, "maxAttempts": 10},
  "mcpServers": {
    "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"],
               "env": {"TOKEN": "${TOKEN}"}, "cwd": "/srv/data",
               "reconnect": {"enabled": true, "initialDelayMs": 500, "maxDelayMs": 30000,
                             "maxAttempts": 10, "jitter": 0},
               "connectTimeoutMs": 30000, "failOnStartupError": false, "waitForReadyMs": 0},
    "remote": {"url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
  }
}`

func TestConfigDesignExample(t *testing.T) {
	cfg, warns, err := Parse([]byte(designExample), envOf(map[string]string{"TOKEN": "t", "API_TOKEN": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Name != "files" || cfg.Servers[1].Name != "remote" {
		t.Fatalf("servers %+v, want files, remote in file order", cfg.Servers)
	}
	files, remote := cfg.Servers[0], cfg.Servers[1]
	if files.Transport != TransportStdio || files.Command != "npx" || len(files.Args) != 3 || files.Dir != "/srv/data" {
		t.Errorf("files: %+v", files)
	}
	if files.Env["TOKEN"] != "${TOKEN}" {
		t.Errorf("env kept %q; want the reference, expanded by the transport at spawn", files.Env["TOKEN"])
	}
	if files.Path != "mcpServers.files" {
		t.Errorf("path %q", files.Path)
	}
	if files.Reconnect != backoff.Default() {
		t.Errorf("files policy %+v, want the default", files.Reconnect)
	}
	if remote.Transport != TransportHTTP || remote.URL != "http://127.0.0.1:8080/mcp" {
		t.Errorf("remote: %+v", remote)
	}
	if remote.Reconnect.Jitter != 0.5 {
		t.Errorf("remote jitter %v, want the HTTP default 0.5", remote.Reconnect.Jitter)
	}
	if remote.ConnectTimeout != DefaultConnectTimeout || remote.WaitForReady != 0 || remote.FailOnStartupError {
		t.Errorf("remote defaults: %+v", remote)
	}
}

func TestConfigVSCodeShape(t *testing.T) {
	cfg, warns, err := Parse([]byte(`{
	  "inputs": [{"type": "promptString", "id": "key"}],
	  "servers": {
	    "a": {"type": "stdio", "command": "srv", "envFile": "${workspaceFolder}/.env"},
	    "b": {"type": "http", "url": "https://example.com/mcp"}
	  }}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Path != "servers.a" || cfg.Servers[1].Transport != TransportHTTP {
		t.Errorf("servers: %+v", cfg.Servers)
	}
	got := warningPaths(warns)
	if got != "inputs servers.a.envFile" {
		t.Errorf("warnings at %q: %v", got, warns)
	}
}

func warningPaths(ws []Warning) string {
	var ps []string
	for _, w := range ws {
		ps = append(ps, w.Path)
	}
	return strings.Join(ps, " ")
}

func TestConfigOverridesFieldByField(t *testing.T) {
	cfg, _, err := Parse([]byte(`{
	  "reconnect": {"initialDelayMs": 100, "maxDelayMs": 2000, "maxAttempts": 4, "jitter": 0.25, "enabled": false},
	  "connectTimeoutMs": 5000, "waitForReadyMs": 700, "failOnStartupError": true,
	  "mcpServers": {
	    "a": {"command": "x", "reconnect": {"maxAttempts": 7}, "connectTimeoutMs": 9000},
	    "b": {"url": "http://h/mcp", "waitForReadyMs": 0, "failOnStartupError": false}
	  }}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	want := backoff.Policy{Enabled: false, InitialDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second, MaxAttempts: 7, Jitter: 0.25}
	if a.Reconnect != want {
		t.Errorf("a policy %+v, want %+v", a.Reconnect, want)
	}
	if a.ConnectTimeout != 9*time.Second || a.WaitForReady != 700*time.Millisecond || !a.FailOnStartupError {
		t.Errorf("a: %+v", a)
	}
	want.MaxAttempts = 4
	if b.Reconnect != want {
		t.Errorf("b policy %+v, want %+v (the top-level jitter wins over the HTTP default)", b.Reconnect, want)
	}
	if b.ConnectTimeout != 5*time.Second || b.WaitForReady != 0 || b.FailOnStartupError {
		t.Errorf("b: %+v", b)
	}
}

func TestConfigDisabled(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x", "disabled": true}, "b": {"command": "y"}}}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "b" || len(cfg.Disabled) != 1 || cfg.Disabled[0] != "a" {
		t.Errorf("servers %+v disabled %v", cfg.Servers, cfg.Disabled)
	}
}

// TestConfigErrors: every error names its JSON path and the rule.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"zero delay", `{"mcpServers":{"files":{"command":"x","reconnect":{"maxDelayMs":0}}}}`,
			"mcpServers.files.reconnect.maxDelayMs: must be > 0 milliseconds, got 0"},
		{"negative delay", `{"mcpServers":{"files":{"command":"x","reconnect":{"initialDelayMs":-5}}}}`,
			"mcpServers.files.reconnect.initialDelayMs: must be > 0 milliseconds, got -5"},
		{"fractional", `{"mcpServers":{"files":{"command":"x","connectTimeoutMs":1.5}}}`,
			"mcpServers.files.connectTimeoutMs: must be an integer, got 1.5"},
		{"string number", `{"mcpServers":{"files":{"command":"x","reconnect":{"maxAttempts":"ten"}}}}`,
			"mcpServers.files.reconnect.maxAttempts: must be an integer, got string"},
		{"zero attempts", `{"mcpServers":{"files":{"command":"x","reconnect":{"maxAttempts":0}}}}`,
			"mcpServers.files.reconnect.maxAttempts: must be >= 1, got 0"},
		{"too many attempts", `{"mcpServers":{"files":{"command":"x","reconnect":{"maxAttempts":1000001}}}}`,
			"mcpServers.files.reconnect.maxAttempts: must be <= 1000000"},
		{"jitter", `{"mcpServers":{"files":{"command":"x","reconnect":{"jitter":1.5}}}}`,
			"mcpServers.files.reconnect.jitter: must be in [0, 1], got 1.5"},
		{"huge delay", `{"mcpServers":{"files":{"command":"x","reconnect":{"maxDelayMs":86400001}}}}`,
			"mcpServers.files.reconnect.maxDelayMs: must be <= 86400000"},
		{"cross-field", `{"mcpServers":{"files":{"command":"x","reconnect":{"initialDelayMs":5000,"maxDelayMs":1000}}}}`,
			"mcpServers.files.reconnect.maxDelayMs: must be >= initialDelayMs (5s), got 1000 (1s)"},
		{"cross-field default", `{"mcpServers":{"files":{"command":"x","reconnect":{"initialDelayMs":60000}}}}`,
			"mcpServers.files.reconnect.maxDelayMs: must be >= initialDelayMs (1m0s), got 30000 (30s) (the default)"},
		{"cross-field inherited", `{"reconnect":{"maxDelayMs":1000},"mcpServers":{"files":{"command":"x","reconnect":{"initialDelayMs":5000}}}}`,
			"reconnect.maxDelayMs: must be >= initialDelayMs (5s), got 1000 (1s) (set at the top level, for mcpServers.files)"},
		{"wait for ready negative", `{"mcpServers":{"files":{"command":"x","waitForReadyMs":-1}}}`,
			"mcpServers.files.waitForReadyMs: must be >= 0 milliseconds (0 fails fast), got -1"},
		{"connect timeout zero", `{"connectTimeoutMs":0,"mcpServers":{}}`,
			"connectTimeoutMs: must be > 0 milliseconds, got 0"},
		{"unknown server key", `{"mcpServers":{"files":{"command":"x","comand":"y"}}}`,
			"mcpServers.files.comand: unknown key (server keys: command,"},
		{"unknown reconnect key", `{"mcpServers":{"files":{"command":"x","reconnect":{"delay":1}}}}`,
			"mcpServers.files.reconnect.delay: unknown key (reconnect keys:"},
		{"unknown top key", `{"mcpServers":{},"retry":{}}`, "retry: unknown key (top-level keys:"},
		{"no servers", `{"reconnect":{}}`, `(top level): has no "mcpServers" (or VS Code "servers") object`},
		{"not an object", `[]`, "(top level): must be an object, got array"},
		{"sse", `{"servers":{"old":{"type":"sse","url":"http://h/sse"}}}`,
			`servers.old.type: "sse" (the legacy HTTP+SSE transport) is not supported`},
		{"sse transportType", `{"mcpServers":{"old":{"transportType":"sse","url":"http://h/sse"}}}`,
			`mcpServers.old.transportType: "sse" (the legacy HTTP+SSE transport) is not supported`},
		{"bad type", `{"servers":{"a":{"type":"ws","url":"http://h"}}}`, `servers.a.type: must be "stdio" or "http", got "ws"`},
		{"type mismatch", `{"servers":{"a":{"type":"http","command":"x"}}}`, `servers.a.type: is "http", but the server has command (stdio)`},
		{"both", `{"mcpServers":{"a":{"command":"x","url":"http://h"}}}`, "mcpServers.a.url: a server has either command (stdio) or url (HTTP), not both"},
		{"neither", `{"mcpServers":{"a":{"args":[]}}}`, "mcpServers.a: needs command (a stdio server) or url (a Streamable HTTP server)"},
		{"empty command", `{"mcpServers":{"a":{"command":" "}}}`, "mcpServers.a.command: must not be empty"},
		{"empty url", `{"mcpServers":{"a":{"url":""}}}`, "mcpServers.a.url: must not be empty"},
		{"args type", `{"mcpServers":{"a":{"command":"x","args":["ok",3]}}}`, "mcpServers.a.args[1]: must be a string, got number"},
		{"env type", `{"mcpServers":{"a":{"command":"x","env":{"K":1}}}}`, "mcpServers.a.env.K: must be a string, got number"},
		{"env name", `{"mcpServers":{"a":{"command":"x","env":{"A=B":"1"}}}}`, `mcpServers.a.env["A=B"]: is not a valid environment variable name`},
		{"headers on stdio", `{"mcpServers":{"a":{"command":"x","headers":{}}}}`, "mcpServers.a.headers: only for url servers"},
		{"args on http", `{"mcpServers":{"a":{"url":"http://h","args":[]}}}`, "mcpServers.a.args: only for stdio servers"},
		{"bad URL", `{"mcpServers":{"a":{"url":"http://user:p%zzSECRET@h/?api_key=SECRET"}}}`,
			`mcpServers.a.url: is not a valid URL: invalid %-escape (http://h/***)`},
		{"bad URL control", "{\"mcpServers\":{\"a\":{\"url\":\"http://h/?api_key=SECRET\\u0001\"}}}",
			`mcpServers.a.url: is not a valid URL: net/url: invalid control character in URL (http://h/***)`},
		{"bad scheme", `{"mcpServers":{"a":{"url":"ftp://h"}}}`, `mcpServers.a.url: must be an http:// or https:// URL, got scheme "ftp"`},
		{"header name", `{"mcpServers":{"a":{"url":"http://h","headers":{"Bad Header":"v"}}}}`, `mcpServers.a.headers["Bad Header"]: is not a valid HTTP header name`},
		{"header newline", `{"mcpServers":{"a":{"url":"http://h","headers":{"X":"${NL}"}}}}`, "mcpServers.a.headers.X: must not contain CR, LF or NUL"},
		{"bad name", `{"mcpServers":{"my server":{"command":"x"}}}`, `mcpServers["my server"]: server name must be 1-32 characters of [A-Za-z0-9_-]`},
		{"long name", `{"mcpServers":{"` + strings.Repeat("a", 33) + `":{"command":"x"}}}`, "server name must be 1-32 characters"},
		{"duplicate key", `{"mcpServers":{"a":{"command":"x","command":"y"}}}`, "mcpServers.a.command: duplicate key"},
		{"duplicate server", `{"mcpServers":{"a":{"command":"x"}},"servers":{"a":{"command":"y"}}}`, "servers.a: server name already used at mcpServers.a"},
		{"bool type", `{"mcpServers":{"a":{"command":"x","disabled":"yes"}}}`, "mcpServers.a.disabled: must be true or false, got string"},
		{"syntax", "{\n  \"mcpServers\": {,}\n}", "invalid JSON at line 2, column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.json), envOf(map[string]string{"NL": "a\nb"}))
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %v leaks the URL's secret", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error does not match ErrInvalidConfig: %v", err)
			}
		})
	}
}

// TestConfigAllErrors: check reports every problem at once, in file order.
func TestConfigAllErrors(t *testing.T) {
	_, _, err := Parse([]byte(`{"mcpServers":{
	  "a":{"command":"x","reconnect":{"maxDelayMs":0}},
	  "b":{"command":"y","bogus":1}}}`), envOf(nil))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "mcpServers.a.reconnect.maxDelayMs") || !strings.HasPrefix(lines[1], "mcpServers.b.bogus") {
		t.Errorf("errors:\n%v", err)
	}
}

func TestConfigWarnings(t *testing.T) {
	_, warns, err := Parse([]byte(`{"mcpServers":{
	  "a":{"command":"x","alwaysAllow":["t"],"autoApprove":[],"timeout":60,"description":"d","type":"stdio",
	       "env":{"K":"${SET}-${UNSET}"}},
	  "b":{"url":"http://h","headers":{"Authorization":"Bearer $NOPE"}}}}`), envOf(map[string]string{"SET": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := warningPaths(warns)
	want := "mcpServers.a.alwaysAllow mcpServers.a.autoApprove mcpServers.a.timeout mcpServers.a.description mcpServers.a.env.K mcpServers.b.headers.Authorization"
	if got != want {
		t.Errorf("warnings at\n  %s\nwant\n  %s\n%v", got, want, warns)
	}
	for _, w := range warns {
		if strings.Contains(w.Path, "env.K") && !strings.Contains(w.Message, "${UNSET} is not set") {
			t.Errorf("env warning %q", w)
		}
	}
}

func TestConfigNullIsOmitted(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"reconnect":null,"mcpServers":{"a":{"command":"x","env":null,"args":null,"reconnect":{"jitter":null}}}}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Servers[0]; a.Env != nil || a.Args != nil || a.Reconnect != backoff.Default() {
		t.Errorf("%+v", a)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"a":{"command":"x","reconnect":{"maxAttempts":0}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path)
	var ce *Error
	if !errors.As(err, &ce) || ce.File != path || ce.Path != "mcpServers.a.reconnect.maxAttempts" {
		t.Fatalf("err %v (%#v)", err, ce)
	}
	if !strings.HasPrefix(err.Error(), path+": mcpServers.a.reconnect.maxAttempts: must be >= 1") {
		t.Errorf("err %q", err)
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestServerEqual(t *testing.T) {
	parse := func(s string) Server {
		t.Helper()
		cfg, _, err := Parse([]byte(s), envOf(nil))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Servers[0]
	}
	a := parse(`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}}}}`)
	for _, same := range []string{
		`{"servers":{"a":{"type":"stdio","command":"x","args":["1"],"env":{"K":"v"},"alwaysAllow":[]}}}`,
		`{"reconnect":{"maxAttempts":10},"mcpServers":{"a":{"env":{"K":"v"},"args":["1"],"command":"x"}}}`,
	} {
		if b := parse(same); !a.Equal(b) {
			t.Errorf("%s: not equal to %+v", same, a)
		}
	}
	for _, diff := range []string{
		`{"mcpServers":{"a":{"command":"x","args":["2"],"env":{"K":"v"}}}}`,
		`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"w"}}}}`,
		`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"},"reconnect":{"maxAttempts":3}}}}`,
		`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"},"waitForReadyMs":1}}}`,
	} {
		if b := parse(diff); a.Equal(b) {
			t.Errorf("%s: equal to %+v", diff, a)
		}
	}
}

func TestServerHTTPOpener(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"mcpServers":{"web":{"url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${T}"}}}}`), envOf(map[string]string{"T": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	op, err := cfg.Servers[0].Opener(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := op.(*transport.HTTP)
	if !ok || h.URL != "https://example.com/mcp" || h.Headers["Authorization"] != "Bearer ${T}" || h.Server != "web" {
		t.Errorf("opener %#v", op)
	}
}

// TestConfigServerNameRule: the config refuses a server name that
// tools.CheckServerName refuses, at the server's JSON path (docs/design.md §7, R29).
func TestConfigServerNameRule(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"a__b", `mcpServers.a__b: ` + tools.ServerNameRule + ` (it prefixes the public tool names, <server>__<tool>): "a__b" contains "__"`},
		{"a_", `mcpServers.a_: ` + tools.ServerNameRule + ` (it prefixes the public tool names, <server>__<tool>): "a_" ends in "_"`},
	} {
		_, _, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"`+tc.name+`":{"command":"y"}}}`), envOf(nil))
		var ce *Error
		if !errors.As(err, &ce) || ce.Path != "mcpServers."+tc.name || err.Error() != tc.want {
			t.Errorf("%s: error\n  %v\nwant\n  %s", tc.name, err, tc.want)
		}
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, tools.ErrInvalidName) {
			t.Errorf("%s: %v is not ErrInvalidConfig and tools.ErrInvalidName", tc.name, err)
		}
	}
	for _, ok := range []string{"a_b", "a-b", "A1", strings.Repeat("a", 32)} {
		if _, _, err := Parse([]byte(`{"mcpServers":{"`+ok+`":{"command":"x"}}}`), envOf(nil)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A "$$" is a literal "$" and warns of nothing; an unterminated "${" or a
// "${...}" without a name is kept as written and warned about, so a
// password with a "$" in it is not silently cut (docs/design.md §11).
func TestConfigDollarEscapes(t *testing.T) {
	_, warns, err := Parse([]byte(`{"mcpServers":{
	  "a":{"command":"x","env":{"PASS":"pa$$w0rd","OPEN":"x${HOME","BAD":"${1x}","LONE":"cost 5$"}}}}`),
		envOf(map[string]string{"HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := warningPaths(warns), "mcpServers.a.env.OPEN mcpServers.a.env.BAD"; got != want {
		t.Errorf("warnings at %q, want %q: %v", got, want, warns)
	}
	for _, w := range warns {
		if !strings.Contains(w.Message, "kept as written") {
			t.Errorf("warning %q does not say the value is kept", w)
		}
	}
}

// stabilityWindowMs sets the window; shorter than maxDelayMs is an error
// at the path where it was set (docs/design.md §5).
func TestConfigStabilityWindow(t *testing.T) {
	cfg, _, err := Parse([]byte(`{"reconnect":{"stabilityWindowMs":60000},"mcpServers":{
	  "a":{"command":"x"},
	  "b":{"command":"x","reconnect":{"maxDelayMs":1000,"stabilityWindowMs":2000}}}}`), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Reconnect.StabilityWindow(); got != time.Minute {
		t.Errorf("a: window %v, want the top level's 1m", got)
	}
	if got := cfg.Servers[1].Reconnect.StabilityWindow(); got != 2*time.Second {
		t.Errorf("b: window %v, want 2s", got)
	}
	_, _, err = Parse([]byte(`{"mcpServers":{"c":{"command":"x","reconnect":{"stabilityWindowMs":1000}}}}`), envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "mcpServers.c.reconnect.stabilityWindowMs: must be >= maxDelayMs (30s), got 1000 (1s)") {
		t.Errorf("err = %v", err)
	}
}
