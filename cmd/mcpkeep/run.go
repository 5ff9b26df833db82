package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/tools"
)

// runRun is `mcpkeep run [flags] -- COMMAND [ARGS...]` (or --url URL): one
// server, no config file, exposed under its own names, as a one-line
// change to any host's config. It is the proxy with a config built from
// the flags (checked by the config parser, so a bad value is reported as
// the flag that set it) and an initialize answer that mirrors the server:
// its serverInfo, capabilities and instructions, once its first connect
// settled (bounded by the smaller of the connect timeout and --init-wait).
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run [flags] -- COMMAND [ARGS...]\n       mcpkeep run [flags] --url URL")
	u := fs.String("url", "", "a Streamable HTTP server's URL, instead of a command")
	name := fs.String("name", "", "the server's name in logs (default: the command's or host's name)")
	maxAttempts := fs.String("max-attempts", "", "retries of one outage before giving up (config maxAttempts; default 10)")
	initialDelay := fs.String("initial-delay", "", "delay before the first retry, e.g. 500ms (config initialDelayMs; default 500ms)")
	maxDelay := fs.String("max-delay", "", "the longest delay between retries, e.g. 30s (config maxDelayMs; default 30s)")
	connectTimeout := fs.String("connect-timeout", "", "bound of spawn + handshake + initial listing, e.g. 30s (config connectTimeoutMs)")
	waitForReady := fs.String("wait-for-ready", "", "how long a request waits for the server during an outage, e.g. 5s; 0 fails fast (config waitForReadyMs)")
	initWaitFlag := fs.Duration("init-wait", 10*time.Second, "the longest the host's initialize waits for the server's first connect")
	cwd := fs.String("cwd", "", "the command's working directory")
	var env, headers kvFlag
	fs.Var(&env, "env", "K=V: an environment variable of the command (repeatable; ${VAR} expands at each spawn)")
	fs.Var(&headers, "header", "K=V: an HTTP header of --url requests (repeatable)")
	format := fs.String("log-format", "text", "log format on stderr: text | json")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	tracePath := fs.String("trace", "", "append every lifecycle transition to FILE as JSON lines")
	var listen listenOpts
	listen.register(fs)

	// The command follows "--": everything before it is mcpkeep's.
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	if slices.Contains(args, "-h") || slices.Contains(args, "-help") || slices.Contains(args, "--help") {
		defer fmt.Fprint(stdout, runHelp)
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	log, err := newLogger(stderr, *format, *level)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if err := listen.check(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case *u == "" && len(command) == 0:
		errs = append(errs, errors.New("give a command after -- (or --url URL)"))
	case *u != "" && len(command) > 0:
		errs = append(errs, fmt.Errorf("give either --url or a command, not both (command %q)", command[0]))
	}
	if len(errs) > 0 {
		fmt.Fprintf(stderr, "mcpkeep run: %v\n", errors.Join(errs...))
		fs.SetOutput(stderr)
		fs.Usage()
		return 2
	}
	srvName := *name
	if srvName == "" {
		srvName = defaultName(*u, command)
	}
	spec := runSpec{name: srvName, url: *u, command: command, cwd: *cwd, env: env, headers: headers,
		maxAttempts: *maxAttempts, initialDelay: *initialDelay, maxDelay: *maxDelay,
		connectTimeout: *connectTimeout, waitForReady: *waitForReady}
	cfg, err := spec.config()
	if err != nil {
		fmt.Fprintf(stderr, "mcpkeep run: %v\n", err)
		return 2
	}
	wait := *initWaitFlag
	if ct := cfg.Servers[0].ConnectTimeout; ct > 0 && ct < wait {
		wait = ct
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	sv := &serving{tracePath: *tracePath, log: log, sdkLog: *level == "debug", listen: listen,
		opts: proxy.Options{Mirror: srvName, InitWait: wait, Pool: mcpkeep.PoolOptions{Namer: tools.OwnNames}},
		load: func() (*config.Config, []config.Warning, error) { return cfg, nil, nil }}
	return sv.run(os.Stdin, writeCloser(stdout), sigs)
}

const runHelp = `
Examples, as the one-line change to a host's config ("command" and "args"):
  "command": "mcpkeep", "args": ["run", "--", "npx", "-y", "@modelcontextprotocol/server-everything"]
  "command": "mcpkeep", "args": ["run", "--max-attempts", "20", "--", "uvx", "mcp-server-git"]
  "command": "mcpkeep", "args": ["run", "--url", "http://127.0.0.1:8080/mcp", "--header", "Authorization=Bearer ${TOKEN}"]
Durations take a unit (500ms, 2s, 1m) or are milliseconds (500).
`

// runSpec is what the flags say; config turns it into a config file's
// content and parses it, so every value is checked by the same rules.
type runSpec struct {
	name, url, cwd                                                    string
	command                                                           []string
	env, headers                                                      kvFlag
	maxAttempts, initialDelay, maxDelay, connectTimeout, waitForReady string
}

// flagOf maps a config key back to the flag that set it.
var flagOf = map[string]string{
	"maxAttempts": "--max-attempts", "initialDelayMs": "--initial-delay", "maxDelayMs": "--max-delay",
	"connectTimeoutMs": "--connect-timeout", "waitForReadyMs": "--wait-for-ready", "cwd": "--cwd",
	"env": "--env", "headers": "--header", "url": "--url", "command": "COMMAND",
}

func (r runSpec) config() (*config.Config, error) {
	srv := map[string]any{}
	var errs []error
	if r.url != "" {
		srv["url"] = r.url
		if len(r.headers) > 0 {
			srv["headers"] = r.headers.m()
		}
	} else {
		srv["command"] = r.command[0]
		srv["args"] = r.command[1:]
		if len(r.env) > 0 {
			srv["env"] = r.env.m()
		}
		if r.cwd != "" {
			srv["cwd"] = r.cwd
		}
		if len(r.headers) > 0 {
			errs = append(errs, errors.New("--header: only with --url"))
		}
	}
	rec := map[string]any{}
	if r.maxAttempts != "" {
		n, err := strconv.Atoi(r.maxAttempts)
		if err != nil {
			errs = append(errs, fmt.Errorf("--max-attempts: %q is not a whole number", r.maxAttempts))
		}
		rec["maxAttempts"] = n
	}
	for _, d := range []struct {
		flag, value, key string
		into             map[string]any
	}{
		{"--initial-delay", r.initialDelay, "initialDelayMs", rec},
		{"--max-delay", r.maxDelay, "maxDelayMs", rec},
		{"--connect-timeout", r.connectTimeout, "connectTimeoutMs", srv},
		{"--wait-for-ready", r.waitForReady, "waitForReadyMs", srv},
	} {
		if d.value == "" {
			continue
		}
		ms, err := parseMs(d.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.flag, err))
			continue
		}
		d.into[d.key] = ms
	}
	if len(rec) > 0 {
		srv["reconnect"] = rec
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{r.name: srv}})
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Parse(data, nil)
	if err != nil {
		return nil, renameKeys(err)
	}
	return cfg, nil
}

// parseMs reads a duration with a unit, or milliseconds.
func parseMs(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (500ms, 2s) or milliseconds", s)
	}
	return d.Milliseconds(), nil
}

var configKey = regexp.MustCompile(`mcpServers\.[^.:]+(?:\.reconnect)?\.([A-Za-z]+)`)

// renameKeys rewrites the parser's JSON paths into the flags that set them.
func renameKeys(err error) error {
	msg := configKey.ReplaceAllStringFunc(err.Error(), func(path string) string {
		key := configKey.FindStringSubmatch(path)[1]
		if f, ok := flagOf[key]; ok {
			return f
		}
		return path
	})
	msg = strings.ReplaceAll(msg, "<memory>: ", "")
	return errors.New(msg)
}

// defaultName is the server's name from its command or URL, made a valid
// server name (tools.CheckServerName).
func defaultName(u string, command []string) string {
	base := ""
	if u != "" {
		if pu, err := url.Parse(u); err == nil {
			base = pu.Hostname()
		}
	} else {
		base = filepath.Base(command[0])
		// npx/uvx/node wrappers: the package names the server better.
		for _, a := range command[1:] {
			if !strings.HasPrefix(a, "-") && (base == "npx" || base == "uvx" || base == "node" || base == "bunx" || base == "pnpm") {
				base = filepath.Base(a)
				break
			}
		}
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	for strings.Contains(n, "--") {
		n = strings.ReplaceAll(n, "--", "-")
	}
	if len(n) > tools.MaxServerNameLen {
		n = strings.TrimRight(n[:tools.MaxServerNameLen], "-")
	}
	if tools.CheckServerName(n) != nil {
		return "server"
	}
	return n
}

// kvFlag is a repeatable K=V flag.
type kvFlag []string

func (k *kvFlag) String() string { return strings.Join(*k, ",") }

func (k *kvFlag) Set(v string) error {
	if key, _, ok := strings.Cut(v, "="); !ok || key == "" {
		return fmt.Errorf("%q is not K=V", v)
	}
	*k = append(*k, v)
	return nil
}

func (k kvFlag) m() map[string]string {
	out := map[string]string{}
	for _, kv := range k {
		key, v, _ := strings.Cut(kv, "=")
		out[key] = v
	}
	return out
}
