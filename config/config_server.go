package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// hostKeys are server keys that MCP hosts (Claude Desktop, Cursor, VS Code,
// Cline, Roo, Gemini CLI) define and mcpkeep does not use: accepted with a
// warning, so an existing host file works unchanged. The hosts' tool
// filters (disabledTools, includeTools, excludeTools) are not among them:
// mcpkeep honours those (docs/design.md §21).
var hostKeys = map[string]string{
	"alwaysAllow":   "tool approval is the host's business",
	"autoApprove":   "tool approval is the host's business",
	"trust":         "tool approval is the host's business",
	"timeout":       "use connectTimeoutMs (and waitForReadyMs for calls)",
	"description":   "",
	"envFile":       "its variables are NOT loaded: put them in env",
	"transportType": "the transport follows command or url",
	"watchPaths":    "",
	"dev":           "",
	"gallery":       "",
	"version":       "",
}

// serverKeys are the keys mcpkeep reads in a server block.
const serverKeys = "command, args, env, inheritEnv, cwd, url, headers, oauth, type, reconnect, connectTimeoutMs, failOnStartupError, waitForReadyMs, " +
	"tools, prompts, toolOverrides, replaySafeCalls, tasks, start, idleStopMs, eras, disabledTools, includeTools, excludeTools, disabled, " + probeKeys

// server parses one server block; ok is false when it had errors.
func (p *parser) server(m member, d defaults) (sc Server, disabled, ok bool) {
	before := len(p.errs)
	sc = Server{Name: m.key, Path: string(m.path)}
	if err := tools.CheckServerName(m.key); err != nil {
		p.fail(&Error{Path: string(m.path), Rule: err.Error(), Err: err})
	}
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		p.fail(err)
		return sc, false, false
	}
	var (
		typ, transportType       setting[string]
		args, env, cwd, headers  jsonPath
		envMembers, hdrMembers   []member
		rec                      reconnectFields
		connectTimeout           setting[time.Duration]
		failOnStartup            setting[bool]
		waitForReady             setting[time.Duration]
		cmdPath, urlPath         jsonPath
		oauthPath                jsonPath
		toolFilter, promptFilter filterFields
		hostTools                hostFilter
		overrides                []overrideField
		replaySafe               setting[bool]
		taskPolicy               = DefaultTasks
		lazy                     setting[bool]
		idleStop                 setting[time.Duration]
		probe                    probeFields
		inheritEnv               setting[bool]
	)
	for _, f := range members {
		if f.null() {
			continue
		}
		var err error
		switch f.key {
		case "command":
			sc.Command, err = decodeString(f)
			cmdPath = f.path
			if err == nil && strings.TrimSpace(sc.Command) == "" {
				err = ruleError(f.path, "must not be empty")
			}
		case "args":
			sc.Args, err = decodeStrings(f)
			args = f.path
		case "env":
			envMembers, sc.Env, err = decodeStringMap(f)
			env = f.path
		case inheritEnvKey:
			inheritEnv, err = decodeInheritEnv(f)
			sc.InheritEnv = inheritEnv.v
		case "cwd":
			sc.Dir, err = decodeString(f)
			cwd = f.path
		case "url":
			sc.URL, err = decodeString(f)
			urlPath = f.path
			if err == nil && strings.TrimSpace(sc.URL) == "" {
				// Else neither transport would be chosen, and nothing said
				// so (found by FuzzParse).
				err = ruleError(f.path, "must not be empty")
			}
		case "headers":
			hdrMembers, sc.Headers, err = decodeStringMap(f)
			headers = f.path
		case "oauth":
			sc.OAuth, err = p.oauthBlock(f)
			oauthPath = f.path
		case "type":
			typ.v, err = decodeString(f)
			typ.path = f.path
		case "transportType":
			transportType.v, err = decodeString(f)
			transportType.path = f.path
		case "reconnect":
			rec, err = p.reconnect(f)
		case "connectTimeoutMs":
			connectTimeout.v, err = decodeMs(f, false)
			connectTimeout.path = f.path
		case "failOnStartupError":
			failOnStartup.v, err = decodeBool(f)
			failOnStartup.path = f.path
		case "waitForReadyMs":
			waitForReady.v, err = decodeMs(f, true)
			waitForReady.path = f.path
		case "start":
			lazy.v, err = decodeStart(f)
			lazy.path = f.path
		case "idleStopMs":
			idleStop.v, err = decodeMs(f, false)
			idleStop.path = f.path
		case "eras":
			sc.TwinEras, err = decodeEras(f)
		case "disabled":
			disabled, err = decodeBool(f)
		case "tools":
			toolFilter, err = p.filter(f)
		case "prompts":
			promptFilter, err = p.filter(f)
		case "disabledTools", "excludeTools":
			err = hostTools.add(f, false)
		case "includeTools":
			err = hostTools.add(f, true)
		case "toolOverrides":
			overrides = p.overrides(f)
		case "replaySafeCalls":
			replaySafe.v, err = decodeBool(f)
			replaySafe.path = f.path
		case "tasks":
			taskPolicy, err = decodeTasks(f)
		default:
			if ok, perr := probe.field(f); ok {
				err = perr
			} else if why, known := hostKeys[f.key]; known {
				msg := "ignored: mcpkeep does not use it"
				if why != "" {
					msg += " (" + why + ")"
				}
				p.warn(f.path, "%s", msg)
			} else {
				err = ruleError(f.path, "unknown key (server keys: %s)", serverKeys)
			}
		}
		if err != nil {
			p.fail(err)
		}
	}

	// The transport: command or url, and a "type" that agrees.
	switch {
	case sc.Command != "" && sc.URL != "":
		p.fail(ruleError(urlPath, "a server has either command (stdio) or url (HTTP), not both; command is set at %s", cmdPath))
	case sc.Command != "":
		sc.Transport = TransportStdio
	case sc.URL != "":
		sc.Transport = TransportHTTP
	case cmdPath == "" && urlPath == "" && len(p.errs) == before:
		p.fail(ruleError(m.path, "needs command (a stdio server) or url (a Streamable HTTP server)"))
	}
	for _, t := range []setting[string]{typ, transportType} {
		if t.set() {
			p.checkType(t, sc.Transport)
		}
	}
	if transportType.set() {
		p.warn(transportType.path, "ignored: the transport follows command or url")
	}
	p.checkInheritEnv(inheritEnv, sc.Transport)
	switch sc.Transport {
	case TransportStdio:
		if headers != "" {
			p.fail(ruleError(headers, "only for url servers; a stdio server gets env instead"))
		}
		if oauthPath != "" {
			p.fail(ruleError(oauthPath, "only for url servers (a stdio server signs in by itself)"))
			sc.OAuth = nil
		}
		p.checkEnv(envMembers)
	case TransportHTTP:
		for _, k := range []jsonPath{args, env, cwd} {
			if k != "" {
				p.fail(ruleError(k, "only for stdio servers (with command)"))
			}
		}
		p.checkURL(urlPath, sc.URL)
		p.checkHeaders(hdrMembers, sc.Headers)
		if sc.OAuth != nil {
			for _, h := range hdrMembers {
				if strings.EqualFold(h.key, "Authorization") {
					p.fail(ruleError(h.path, "conflicts with oauth, which sends the signed-in token: drop one"))
				}
			}
		}
	}

	// Effective settings: the server's own, else the top level's, else
	// the default.
	base := backoff.Default()
	if sc.Transport == TransportHTTP {
		base = backoff.DefaultHTTP()
	}
	sc.Reconnect = p.policy(m.path, base, rec, d.reconnect)
	sc.ConnectTimeout = DefaultConnectTimeout
	if s := connectTimeout.or(d.connectTimeout); s.set() {
		sc.ConnectTimeout = s.v
	}
	sc.FailOnStartupError = failOnStartup.or(d.failOnStartupError).v
	wfr := waitForReady.or(d.waitForReady)
	sc.WaitForReady, sc.WaitForReadySet = wfr.v, wfr.set()
	sc.Tools = effectiveFilter(toolFilter, d.tools, hostTools)
	sc.Prompts = effectiveFilter(promptFilter, d.prompts, hostFilter{})
	sc.ToolOverrides = p.checkOverrides(sc.Name, overrides, sc.Tools)
	sc.ReplaySafeCalls = true
	if s := replaySafe.or(d.replaySafeCalls); s.set() {
		sc.ReplaySafeCalls = s.v
	}
	sc.Lazy = lazy.or(d.lazy).v
	sc.IdleStop = idleStop.or(d.idleStop).v
	sc.Tasks = taskPolicy
	var perrs []error
	sc.Probe, perrs = probe.resolve(sc.Transport) // config_probe.go
	for _, err := range perrs {
		p.fail(err)
	}
	return sc, disabled, len(p.errs) == before
}

// checkType accepts the "type" values hosts write for the two transports
// and rejects legacy SSE plainly instead of failing at the first connect.
func (p *parser) checkType(t setting[string], transport string) {
	var want string
	switch t.v {
	case "stdio":
		want = TransportStdio
	case "http", "streamable-http", "streamableHttp", "streamable_http":
		want = TransportHTTP
	case "sse":
		p.fail(ruleError(t.path, `"sse" (the legacy HTTP+SSE transport) is not supported: point url at the server's Streamable HTTP endpoint and use "http"`))
		return
	default:
		p.fail(ruleError(t.path, `must be "stdio" or "http", got %q`, t.v))
		return
	}
	if transport != "" && want != transport {
		p.fail(ruleError(t.path, "is %q, but the server has %s", t.v, map[string]string{TransportStdio: "command (stdio)", TransportHTTP: "url (HTTP)"}[transport]))
	}
}

// checkEnv rejects names a process environment cannot hold and warns
// about ${VAR} references to variables that are not set (they expand to
// "", which is rarely what was meant).
func (p *parser) checkEnv(ms []member) {
	for _, m := range ms {
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			p.fail(ruleError(m.path, "is not a valid environment variable name"))
			continue
		}
		v, _ := decodeString(m)
		if strings.ContainsRune(v, 0) {
			p.fail(ruleError(m.path, "must not contain a NUL byte"))
		}
		p.warnUnset(m.path, v)
	}
}

func (p *parser) warnUnset(path jsonPath, v string) {
	names, problems := transport.EnvRefs(v)
	for _, name := range names {
		if _, ok := p.lookup(name); !ok {
			p.warn(path, "${%s} is not set in the environment; it expands to \"\"", name)
		}
	}
	for _, problem := range problems {
		p.warn(path, "%s", problem)
	}
}

func (p *parser) checkURL(path jsonPath, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// Neither the URL nor url.Error's quote of it: it may hold a
		// password or a key in its query (docs/design.md §8).
		p.fail(ruleError(path, "is not a valid URL: %s (%s)", urlProblem(err), transport.RedactURL(raw)))
	case u.Scheme != "http" && u.Scheme != "https":
		p.fail(ruleError(path, "must be an http:// or https:// URL, got scheme %q", u.Scheme))
	case u.Host == "":
		p.fail(ruleError(path, "must name a host"))
	}
}

// urlProblem says what url.Parse found wrong without quoting the URL: an
// escape it quotes may sit inside a password.
func urlProblem(err error) string {
	var ee url.EscapeError
	var he url.InvalidHostError
	var ue *url.Error
	switch {
	case errors.As(err, &ee):
		return "invalid %-escape"
	case errors.As(err, &he):
		return "invalid character in host"
	case errors.As(err, &ue) && !strings.ContainsAny(ue.Err.Error(), "\"'`"):
		return ue.Err.Error()
	}
	return "does not parse"
}

// checkHeaders validates header names, and the values as they expand
// now; the transport expands them again at each connect.
func (p *parser) checkHeaders(ms []member, h map[string]string) {
	for _, m := range ms {
		if !isHeaderToken(m.key) {
			p.fail(ruleError(m.path, "is not a valid HTTP header name"))
		}
		p.warnUnset(m.path, h[m.key])
	}
	out := transport.ExpandEnv(h, p.lookup)
	for _, m := range ms {
		if strings.ContainsAny(out[m.key], "\r\n\x00") {
			p.fail(ruleError(m.path, "must not contain CR, LF or NUL (after ${VAR} expansion)"))
		}
	}
}

func isHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// reconnectFields is a "reconnect" block: each field and where it was set.
type reconnectFields struct {
	enabled      setting[bool]
	initialDelay setting[time.Duration]
	maxDelay     setting[time.Duration]
	maxAttempts  setting[int]
	jitter       setting[float64]
	stability    setting[time.Duration]
}

func (p *parser) reconnect(m member) (reconnectFields, error) {
	var r reconnectFields
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		return r, err
	}
	for _, f := range members {
		if f.null() {
			continue
		}
		var err error
		// A value that failed to decode stays unset, so the merged policy
		// does not report it a second time.
		switch f.key {
		case "enabled":
			var v bool
			if v, err = decodeBool(f); err == nil {
				r.enabled = setting[bool]{v, f.path}
			}
		case "initialDelayMs", "maxDelayMs", "stabilityWindowMs":
			var v time.Duration
			if v, err = decodeMs(f, false); err == nil {
				switch f.key {
				case "initialDelayMs":
					r.initialDelay = setting[time.Duration]{v, f.path}
				case "maxDelayMs":
					r.maxDelay = setting[time.Duration]{v, f.path}
				default:
					r.stability = setting[time.Duration]{v, f.path}
				}
			}
		case "maxAttempts":
			var n int64
			if n, err = decodeInt(f, 1, backoff.MaxMaxAttempts); err == nil {
				r.maxAttempts = setting[int]{int(n), f.path}
			}
		case "jitter":
			var v float64
			v, err = decodeFloat(f)
			if err == nil && !(v >= 0 && v <= 1) {
				err = ruleError(f.path, "must be in [0, 1], got %v", v)
			}
			if err == nil {
				r.jitter = setting[float64]{v, f.path}
			}
		default:
			err = ruleError(f.path, "unknown key (reconnect keys: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, stabilityWindowMs)")
		}
		if err != nil {
			p.fail(err)
		}
	}
	return r, nil
}

// policy merges the server's reconnect block over the top-level one over
// base, and resolves it. A bound broken by the merged policy is reported
// at the path where the offending value was set: the server's block, the
// top-level block, or the server's block when the value is a default.
func (p *parser) policy(server jsonPath, base backoff.Policy, own, top reconnectFields) backoff.Policy {
	var src = map[string]setting[string]{}
	pick := func(field string, o, t jsonPath) {
		switch {
		case o != "":
			src[field] = setting[string]{"", o}
		case t != "":
			src[field] = setting[string]{" (set at the top level, for " + string(server) + ")", t}
		default:
			src[field] = setting[string]{" (the default)", server.key("reconnect").key(jsonKey(field))}
		}
	}
	pol := base
	if s := own.enabled.or(top.enabled); s.set() {
		pol.Enabled = s.v
	}
	if s := own.initialDelay.or(top.initialDelay); s.set() {
		pol.InitialDelay = s.v
	}
	if s := own.maxDelay.or(top.maxDelay); s.set() {
		pol.MaxDelay = s.v
	}
	if s := own.maxAttempts.or(top.maxAttempts); s.set() {
		pol.MaxAttempts = s.v
	}
	if s := own.jitter.or(top.jitter); s.set() {
		pol.Jitter = s.v
	}
	if s := own.stability.or(top.stability); s.set() {
		pol.Stability = s.v
	}
	pick("initialDelay", own.initialDelay.path, top.initialDelay.path)
	pick("maxDelay", own.maxDelay.path, top.maxDelay.path)
	pick("maxAttempts", own.maxAttempts.path, top.maxAttempts.path)
	pick("jitter", own.jitter.path, top.jitter.path)
	pick("stabilityWindow", own.stability.path, top.stability.path)
	resolved, err := pol.Resolve()
	if err != nil {
		fe, ok := err.(*backoff.FieldError)
		if !ok {
			p.fail(&Error{Path: string(server.key("reconnect")), Rule: "invalid reconnect policy", Err: err})
			return pol
		}
		s := src[fe.Field]
		p.fail(ruleError(s.path, "%s, got %s%s", msRule(fe.Rule), msValue(fe.Value), s.v))
		return pol
	}
	return resolved
}

// jsonKey maps backoff's field names to the config's keys.
func jsonKey(field string) string {
	switch field {
	case "initialDelay", "maxDelay", "stabilityWindow":
		return field + "Ms"
	}
	return field
}

// msRule renders a backoff rule in the config's vocabulary.
func msRule(rule string) string {
	return strings.NewReplacer("initialDelay (", "initialDelayMs (", "maxDelay (", "maxDelayMs (").Replace(rule)
}

func msValue(v any) string {
	if d, ok := v.(time.Duration); ok {
		return fmt.Sprintf("%d (%v)", d.Milliseconds(), d)
	}
	return fmt.Sprint(v)
}
