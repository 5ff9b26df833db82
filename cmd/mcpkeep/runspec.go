package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcpkeep/mcpkeep/config"
)

// runSpec is what the flags say; config turns it into a config file's
// content and parses it, so every value is checked by the same rules.
type runSpec struct {
	name, url, cwd, maxAttempts                          string
	command                                              []string
	env, headers                                         kvFlag
	oauth                                                bool
	initialDelay, maxDelay, connectTimeout, waitForReady durationFlag
	lazy                                                 bool
	idleStop                                             durationFlag
	eras                                                 string
	tasks                                                string       // "tasks": {"mode"}
	tasksGrace                                           durationFlag // "tasks": {"graceMs"}
	tasksTools                                           kvFlag       // "tasks": {"tools"}
}

// flagOf maps a config key back to the flag that set it.
var flagOf = map[string]string{
	"maxAttempts": "--max-attempts", "initialDelayMs": "--initial-delay", "maxDelayMs": "--max-delay",
	"connectTimeoutMs": "--connect-timeout", "waitForReadyMs": "--wait-for-ready", "cwd": "--cwd",
	"env": "--env", "headers": "--header", "url": "--url", "command": "COMMAND",
	"idleStopMs": "--idle-stop", "eras": "--eras", "mode": "--tasks", "graceMs": "--tasks-grace",
	"tools": "--tasks-tool",
}

func (r runSpec) config() (*config.Config, error) {
	srv := map[string]any{}
	var errs []error
	if r.url != "" {
		srv["url"] = r.url
		if len(r.headers) > 0 {
			srv["headers"] = r.headers.m()
		}
		if r.oauth {
			srv["oauth"] = true
		}
	} else {
		srv["command"] = r.command[0]
		srv["args"] = r.command[1:]
		// The user types the command inline, as in a shell, and expects
		// it to see their environment as a shell's command would; the
		// allowlist guards a config file's servers from each other's
		// secrets, and run has one server (docs/design.md §8).
		srv["inheritEnv"] = true
		if len(r.env) > 0 {
			srv["env"] = r.env.m()
		}
		if r.cwd != "" {
			srv["cwd"] = r.cwd
		}
		if len(r.headers) > 0 {
			errs = append(errs, errors.New("--header: only with --url"))
		}
		if r.oauth {
			errs = append(errs, errors.New("--oauth: only with --url"))
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
	// The flags parsed the durations; the config parser checks their
	// ranges, and renameKeys names the flag of a value out of range.
	for _, d := range []struct {
		value durationFlag
		key   string
		into  map[string]any
	}{
		{r.initialDelay, "initialDelayMs", rec},
		{r.maxDelay, "maxDelayMs", rec},
		{r.connectTimeout, "connectTimeoutMs", srv},
		{r.waitForReady, "waitForReadyMs", srv},
		{r.idleStop, "idleStopMs", srv},
	} {
		if d.value.set {
			d.into[d.key] = d.value.d.Milliseconds()
		}
	}
	if len(rec) > 0 {
		srv["reconnect"] = rec
	}
	if r.lazy {
		srv["start"] = config.StartLazy
	}
	if r.eras != "" {
		srv["eras"] = r.eras // checked by the config parser
	}
	// The tasks block (docs/design.md §25), checked by the config parser.
	tb := map[string]any{}
	if r.tasks != "" {
		tb["mode"] = r.tasks
	}
	if r.tasksGrace.set {
		tb["graceMs"] = r.tasksGrace.d.Milliseconds()
	}
	if len(r.tasksTools) > 0 {
		tb["tools"] = r.tasksTools.m()
	}
	if len(tb) > 0 {
		srv["tasks"] = tb
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
	// Signing in to it names the URL, not r.name: there is no config file
	// for `auth login NAME` to read (docs/design.md §22).
	cfg.Servers[0].ByURL = r.url != ""
	return cfg, nil
}

var configKey = regexp.MustCompile(`mcpServers\.[^.:]+(?:\.reconnect|\.tasks)?\.([A-Za-z]+)`)

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
