package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/tools"
)

// Config is a parsed and validated config file (docs/design.md §11): the servers
// to supervise, each with its effective settings.
//
// The file is the JSON that MCP hosts already use, in either shape:
//
//	{"mcpServers": {"files": {"command": "npx", "args": [...], "env": {...}}}}   Claude Desktop, Cursor
//	{"servers": {"files": {"type": "stdio", "command": "npx", ...}}}             VS Code
//
// plus mcpkeep's own keys: a top-level "reconnect" block (enabled,
// initialDelayMs, maxDelayMs, maxAttempts, jitter) that a server-level
// "reconnect" overrides field by field, and "connectTimeoutMs",
// "failOnStartupError" and "waitForReadyMs", per server or top-level as
// defaults for every server, and "oauth" on a url server (sign-in,
// docs/design.md §22). What the host sees (docs/design.md §21): "tools"
// and "prompts" filters ({"allow": [globs], "deny": [globs]}, per server
// or top-level, field by field), the hosts' own "disabledTools",
// "excludeTools" and "includeTools", "toolOverrides" per server, and
// "replaySafeCalls" (default true). A server with "disabled": true is validated
// but not run. Keys that hosts define and mcpkeep does not use
// ("alwaysAllow", "envFile", "timeout", ...) are accepted with a Warning;
// any other key is an error naming its JSON path.
type Config struct {
	// Servers are the enabled servers, in file order.
	Servers []Server
	// Disabled names the servers with "disabled": true.
	Disabled []string
}

// DefaultConnectTimeout is the connect timeout of a server that sets no
// "connectTimeoutMs" (docs/design.md §6); the supervisor's Options default to it too.
const DefaultConnectTimeout = 30 * time.Second

// Transports of a Server.
const (
	TransportStdio = "stdio" // "command": a child process speaking over stdin/stdout
	TransportHTTP  = "http"  // "url": a Streamable HTTP endpoint
)

// Server is one server's effective configuration: every default
// applied and every bound checked. Two Servers that are Equal run
// the same way, which is what mcpkeep.Pool.Apply compares on reload.
type Server struct {
	Name string
	// Path is the JSON path of the server's block ("mcpServers.files"),
	// for messages; it is not part of the effective configuration.
	Path string
	// File is the config file the server was loaded from ("" when parsed
	// from elsewhere, as `mcpkeep run` does); ByURL says the server was
	// given by its URL alone (`mcpkeep run --url`). Both only shape the
	// sign-in command shown (oauth.Target.LoginCommand); neither is part
	// of the effective configuration.
	File      string
	ByURL     bool
	Transport string // TransportStdio or TransportHTTP

	// stdio
	Command string
	Args    []string
	// Env is added to mcpkeep's environment for the child. Values keep
	// their ${VAR} references: transport.Stdio expands them from mcpkeep's
	// environment at each spawn (expanding here too would expand twice and
	// mangle a secret that contains "$").
	Env map[string]string
	// InheritEnv ("inheritEnv") gives the child all of mcpkeep's
	// environment, not only the base variables (transport.Stdio.InheritEnv).
	InheritEnv bool
	Dir        string // "cwd"

	// http
	URL string
	// Headers are sent with every request. Like Env, values keep their
	// ${VAR} references, which the transport expands at each connect.
	// Headers and env values are secrets: never logged or printed.
	Headers map[string]string
	// OAuth, when set, signs in to the server (docs/design.md §22); nil
	// sends Headers only.
	OAuth *OAuth

	// Reconnect is the resolved reconnect policy.
	Reconnect          backoff.Policy
	ConnectTimeout     time.Duration
	FailOnStartupError bool
	// WaitForReady is how long a call made during an outage waits for
	// recovery (mcpkeep.Pool.Call); 0 fails fast. The parser leaves it 0
	// when waitForReadyMs is not written (the library's default: a host
	// decides); ForServing gives such servers ServeWaitForReady.
	WaitForReady time.Duration
	// WaitForReadySet: waitForReadyMs was written, for the server or at
	// the top level (so ForServing leaves it as written, 0 included).
	WaitForReadySet bool

	// What the host sees (docs/design.md §21). Tools and Prompts filter
	// the server's items by their own names ("tools", "prompts", and the
	// host keys disabledTools, includeTools, excludeTools);
	// ToolOverrides, keyed by the server's tool names, rename and
	// redescribe tools.
	Tools         tools.Filter
	Prompts       tools.Filter
	ToolOverrides map[string]tools.Override
	// ReplaySafeCalls lets a call lost to the server's crash be sent once
	// more on the next generation when the tool declares readOnlyHint or
	// idempotentHint ("replaySafeCalls", default true).
	ReplaySafeCalls bool
	// Lazy ("start": "lazy"): with a cached catalog the server is
	// started by the first request that needs it (docs/design.md §20).
	Lazy bool
	// IdleStop ("idleStopMs") stops the server after this long without
	// requests; 0 is the default (off, or 10 min for a lazy server).
	IdleStop time.Duration
	// TwinEras ("eras": "twin") serves 2026-07-28 hosts' tool calls
	// from a second process of a stdio server that speaks their era,
	// instead of the one legacy-era process and the bridge ("shared",
	// the default: one process, one state; docs/design.md §24). Not part
	// of Equal: it changes nothing of the server's own process, so a
	// reload that flips it restarts none.
	TwinEras bool
	// Probe is the HTTP health probe ("probeIntervalMs",
	// "probeTimeoutMs", "probeFailures"); zero fields are the defaults.
	Probe Probe
	// Tasks is the tasks extension's policy ("tasks", docs/design.md §25).
	Tasks Tasks
}

// Policy returns what the host may see of s, or nil when it sees
// everything as the server lists it.
func (s Server) Policy() *tools.Policy {
	if s.Tools.Empty() && s.Prompts.Empty() && len(s.ToolOverrides) == 0 {
		return nil
	}
	return &tools.Policy{Tools: s.Tools, Prompts: s.Prompts, Overrides: maps.Clone(s.ToolOverrides)}
}

// Equal reports whether a and b configure the same server the same way
// (Path aside).
func (a Server) Equal(b Server) bool {
	return a.Name == b.Name && a.Transport == b.Transport && a.Command == b.Command &&
		equalStrings(a.Args, b.Args) && equalMaps(a.Env, b.Env) && a.InheritEnv == b.InheritEnv && a.Dir == b.Dir &&
		a.URL == b.URL && equalMaps(a.Headers, b.Headers) && a.OAuth.equal(b.OAuth) && a.Reconnect == b.Reconnect &&
		a.ConnectTimeout == b.ConnectTimeout && a.FailOnStartupError == b.FailOnStartupError &&
		a.WaitForReady == b.WaitForReady && a.Tools.Equal(b.Tools) && a.Prompts.Equal(b.Prompts) &&
		equalOverrides(a.ToolOverrides, b.ToolOverrides) && a.ReplaySafeCalls == b.ReplaySafeCalls &&
		a.Lazy == b.Lazy && a.IdleStop == b.IdleStop && a.Probe == b.Probe && a.Tasks.Equal(b.Tasks)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Warning is something in a config file that mcpkeep accepts but ignores
// or that will probably not do what was meant.
type Warning struct {
	Path    string // JSON path
	Message string
}

func (w Warning) String() string { return w.Path + ": " + w.Message }

// ErrInvalidConfig is wrapped by every *Error.
var ErrInvalidConfig = errors.New("invalid config")

// Error is one problem in a config file: where (the JSON path, e.g.
// "mcpServers.files.reconnect.maxDelayMs") and which rule it breaks.
type Error struct {
	File string // set by Load
	Path string // empty for the file as a whole (a syntax error)
	Rule string
	Err  error // the underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Rule)
	if e.Err != nil && !strings.Contains(e.Rule, e.Err.Error()) {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidConfig, e.Err}
	}
	return []error{ErrInvalidConfig}
}

func ruleError(p jsonPath, format string, args ...any) *Error {
	return &Error{Path: string(p), Rule: fmt.Sprintf(format, args...)}
}

// Load reads and parses the config file at path, expanding ${VAR}
// from the process environment. Every error names the file and the JSON
// path.
func Load(path string) (*Config, []Warning, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, warns, err := Parse(data, os.LookupEnv)
	if err != nil {
		var errs []error
		for _, e := range configErrors(err) {
			e.File = path
			errs = append(errs, e)
		}
		return nil, warns, errors.Join(errs...)
	}
	// Absolute: the command naming the file may be typed elsewhere.
	file := path
	if abs, err := filepath.Abs(path); err == nil {
		file = abs
	}
	for i := range cfg.Servers {
		cfg.Servers[i].File = file
	}
	return cfg, warns, nil
}

// configErrors lists the *Errors that Parse joined.
func configErrors(err error) []*Error {
	var out []*Error
	if j, ok := err.(interface{ Unwrap() []error }); ok && !isConfigError(err) {
		for _, e := range j.Unwrap() {
			out = append(out, configErrors(e)...)
		}
		return out
	}
	var ce *Error
	if errors.As(err, &ce) {
		return []*Error{ce}
	}
	return []*Error{{Rule: err.Error()}}
}

func isConfigError(err error) bool { _, ok := err.(*Error); return ok }

// Parse parses a config file's contents. lookup stands for the
// environment the servers will see (nil means os.LookupEnv): Parse
// warns about ${VAR} references in env and header values that it cannot
// resolve and checks expanded header values; the values themselves stay
// unexpanded in the Config, because the transports expand them at each
// spawn or connect. It returns every error found, joined, each a
// *Error naming its JSON path; warnings come back even on error.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, []Warning, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	p := &parser{lookup: lookup}
	cfg := p.file(data)
	if len(p.errs) > 0 {
		errs := make([]error, len(p.errs))
		for i, e := range p.errs {
			errs[i] = e
		}
		return nil, p.warns, errors.Join(errs...)
	}
	return cfg, p.warns, nil
}

// parser collects every error and warning of one file, so `mcpkeep check`
// reports them all at once.
type parser struct {
	lookup func(string) (string, bool)
	errs   []*Error
	warns  []Warning
}

func (p *parser) fail(err error) {
	ce, ok := err.(*Error)
	if !ok {
		ce = &Error{Rule: err.Error()}
	}
	for _, e := range p.errs {
		if e.Error() == ce.Error() {
			return
		}
	}
	p.errs = append(p.errs, ce)
}

func (p *parser) warn(path jsonPath, format string, args ...any) {
	p.warns = append(p.warns, Warning{Path: string(path), Message: fmt.Sprintf(format, args...)})
}

// defaults are the top-level settings every server inherits.
type defaults struct {
	reconnect          reconnectFields
	connectTimeout     setting[time.Duration]
	failOnStartupError setting[bool]
	waitForReady       setting[time.Duration]
	tools, prompts     filterFields
	replaySafeCalls    setting[bool]
	lazy               setting[bool]
	idleStop           setting[time.Duration]
}

// setting is a value and where it was set (empty path: not set).
type setting[T any] struct {
	v    T
	path jsonPath
}

func (s setting[T]) set() bool { return s.path != "" }

// or returns s if set, else d.
func (s setting[T]) or(d setting[T]) setting[T] {
	if s.set() {
		return s
	}
	return d
}

func (p *parser) file(data []byte) *Config {
	if !json.Valid(data) {
		var v any
		p.fail(syntaxError(data, json.Unmarshal(data, &v)))
		return nil
	}
	members, err := objectMembers("", data)
	if err != nil {
		if ce, ok := err.(*Error); ok && ce.Path == "" {
			ce.Path = "(top level)"
		}
		p.fail(err)
		return nil
	}
	var d defaults
	var blocks []member
	for _, m := range members {
		if m.null() && m.key != "mcpServers" && m.key != "servers" {
			continue
		}
		var err error
		switch m.key {
		case "mcpServers", "servers":
			blocks = append(blocks, m)
		case "reconnect":
			d.reconnect, err = p.reconnect(m)
		case "connectTimeoutMs":
			d.connectTimeout.v, err = decodeMs(m, false)
			d.connectTimeout.path = m.path
		case "failOnStartupError":
			d.failOnStartupError.v, err = decodeBool(m)
			d.failOnStartupError.path = m.path
		case "waitForReadyMs":
			d.waitForReady.v, err = decodeMs(m, true)
			d.waitForReady.path = m.path
		case "tools":
			d.tools, err = p.filter(m)
		case "prompts":
			d.prompts, err = p.filter(m)
		case "replaySafeCalls":
			d.replaySafeCalls.v, err = decodeBool(m)
			d.replaySafeCalls.path = m.path
		case "start":
			d.lazy.v, err = decodeStart(m)
			d.lazy.path = m.path
		case "idleStopMs":
			d.idleStop.v, err = decodeMs(m, false)
			d.idleStop.path = m.path
		case "inputs":
			p.warn(m.path, "ignored: mcpkeep does not prompt for VS Code inputs, so ${input:...} stays unexpanded")
		case "$schema":
		default:
			err = ruleError(m.path, "unknown key (top-level keys: mcpServers, servers, reconnect, connectTimeoutMs, failOnStartupError, waitForReadyMs, tools, prompts, replaySafeCalls, start, idleStopMs)")
		}
		if err != nil {
			p.fail(err)
		}
	}
	if len(blocks) == 0 {
		p.fail(&Error{Path: "(top level)", Rule: `has no "mcpServers" (or VS Code "servers") object`})
		return nil
	}
	cfg := &Config{}
	names := map[string]jsonPath{}
	for _, b := range blocks {
		if b.null() {
			continue
		}
		servers, err := objectMembers(b.path, b.raw)
		if err != nil {
			p.fail(err)
			continue
		}
		for _, m := range servers {
			if prev, dup := names[m.key]; dup {
				p.fail(ruleError(m.path, "server name already used at %s", prev))
				continue
			}
			names[m.key] = m.path
			sc, disabled, ok := p.server(m, d)
			switch {
			case !ok:
			case disabled:
				cfg.Disabled = append(cfg.Disabled, sc.Name)
			default:
				cfg.Servers = append(cfg.Servers, sc)
			}
		}
	}
	return cfg
}
