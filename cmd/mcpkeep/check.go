package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/spf13/cobra"
)

// newCheckCmd is `mcpkeep check`: validate a config file and show what
// each server would do, above all when it gives up. Exit 1 on any error.
func newCheckCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "validate a config file and print each server's retry schedule",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("--config FILE is required")
			}
			return exit(check(path, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "the config `FILE` to check (required)")
	_ = cmd.MarkFlagFilename("config")
	return cmd
}

func check(path string, stdout, stderr io.Writer) int {
	cfg, warns, err := loadServing(path) // as proxy runs it
	for _, w := range warns {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	failed := false
	fmt.Fprintf(stdout, "%s: %d server(s)", path, len(cfg.Servers))
	if len(cfg.Disabled) > 0 {
		fmt.Fprintf(stdout, ", disabled: %s", strings.Join(cfg.Disabled, ", "))
	}
	fmt.Fprintln(stdout)
	for _, sc := range cfg.Servers {
		fmt.Fprintln(stdout)
		printServer(stdout, sc)
		// Building the transport is the last check a config can fail
		// before anything runs.
		if _, err := sc.Opener(nil); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", sc.Path, err)
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

// printServer describes one server's effective configuration. Env and
// header values are secrets: only their names are shown.
func printServer(w io.Writer, sc config.Server) {
	row := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", label, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "%s (%s)\n", sc.Name, sc.Path)
	switch sc.Transport {
	case config.TransportStdio:
		row("transport", "stdio: %s", strings.Join(append([]string{sc.Command}, sc.Args...), " "))
		if _, err := exec.LookPath(sc.Command); err != nil {
			row("", "note: %v", err)
		}
		if len(sc.Env) > 0 {
			row("env", "%s (values not shown)", strings.Join(sortedKeys(sc.Env), " "))
		}
		if sc.InheritEnv {
			row("environ", "all of mcpkeep's environment (inheritEnv)")
		} else {
			row("environ", "the base variables (PATH, HOME, the locale, proxies, ...) and env; not mcpkeep's others")
		}
		if sc.Dir != "" {
			row("cwd", "%s", sc.Dir)
		}
	case config.TransportHTTP:
		row("transport", "http: %s", transport.RedactURL(sc.URL))
		if len(sc.Headers) > 0 {
			row("headers", "%s (values not shown)", strings.Join(sortedKeys(sc.Headers), " "))
		}
		row("probe", "%s", describeProbe(sc.Probe))
	}
	p := sc.Reconnect
	if !p.Enabled {
		row("reconnect", "disabled: a lost server keeps its tools and waits for a manual reconnect")
	} else {
		row("reconnect", "%d retries per outage, %v doubling to %v, jitter %v", p.MaxAttempts, p.InitialDelay, p.MaxDelay, p.Jitter)
		row("schedule", "%s", schedule(p))
		row("gives up", "%v after the first failure (waits only; connect attempts add up to %v each)", p.Total(), sc.ConnectTimeout)
		row("stability", "%v established resets the retry budget", p.StabilityWindow())
	}
	row("connect", "timeout %v", sc.ConnectTimeout)
	how := ""
	if !sc.WaitForReadySet {
		how = " (the default of proxy and run; waitForReadyMs 0 fails fast)"
	}
	if sc.WaitForReady > 0 {
		row("calls", "wait up to %v for a reconnect during an outage%s", sc.WaitForReady, how)
	} else {
		row("calls", "fail fast during an outage (waitForReadyMs 0)")
	}
	if sc.FailOnStartupError {
		row("startup", "a failed first connect is fatal")
	} else {
		row("startup", "a failed first connect is retried in the background")
	}
	row("tools", "%s", describeFilter(sc.Tools, "tool"))
	if !sc.Prompts.Empty() {
		row("prompts", "%s", describeFilter(sc.Prompts, "prompt"))
	}
	for _, name := range sortedKeys(sc.ToolOverrides) {
		o := sc.ToolOverrides[name]
		var what []string
		if o.Name != "" {
			what = append(what, "exposed as "+o.Name)
		}
		if o.Title != "" {
			what = append(what, fmt.Sprintf("title %q", o.Title))
		}
		if o.Description != "" {
			what = append(what, "own description")
		}
		row("override", "%s: %s", name, strings.Join(what, ", "))
	}
	if sc.ReplaySafeCalls {
		row("replay", "a call lost to a crash is sent once more if the tool declares readOnlyHint or idempotentHint")
	} else {
		row("replay", "off: a call lost to a crash is never sent again")
	}
	idle := sc.IdleStop
	if sc.Lazy {
		if idle == 0 {
			idle = mcpkeep.DefaultIdleStop
		}
		row("start", "lazy: started by the first request once its catalog is cached")
	} else {
		row("start", "eager: started with the proxy")
	}
	if idle > 0 {
		row("idle stop", "after %v without requests (catalog kept, started again on demand)", idle)
	}
}

// describeFilter renders a server's effective filter (docs/design.md §21).
func describeFilter(f tools.Filter, item string) string {
	if f.Empty() {
		return "every " + item + " the server lists"
	}
	var parts []string
	if len(f.Allow) > 0 {
		parts = append(parts, "only "+strings.Join(f.Allow, " "))
	}
	if len(f.Deny) > 0 {
		parts = append(parts, "never "+strings.Join(f.Deny, " "))
	}
	return strings.Join(parts, "; ")
}

// schedule renders the retry waits, folding the run at the cap ("30s ×4");
// it walks Delay rather than Schedule so a million retries cost nothing.
func schedule(p backoff.Policy) string {
	var parts []string
	for n := 1; n <= p.MaxAttempts; n++ {
		d := p.Delay(n)
		if d == p.MaxDelay {
			rest := p.MaxAttempts - n + 1
			if rest > 1 {
				parts = append(parts, fmt.Sprintf("%v ×%d", d, rest))
			} else {
				parts = append(parts, d.String())
			}
			break
		}
		parts = append(parts, d.String())
	}
	s := strings.Join(parts, ", ")
	if p.Jitter > 0 {
		s += fmt.Sprintf(" (each wait shortened by up to %v%% by jitter)", p.Jitter*100)
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describeProbe says how a url server's health is probed when no event
// stream watches its session (docs/design.md §8).
func describeProbe(p config.Probe) string {
	every := fmt.Sprintf("every %v (%v on a loopback URL)", transport.DefaultProbeInterval, transport.DefaultLocalProbeInterval)
	if p.Interval > 0 {
		every = fmt.Sprintf("every %v", p.Interval)
	}
	timeout := cmp.Or(p.Timeout, transport.DefaultProbeTimeout)
	failures := cmp.Or(p.Failures, transport.DefaultProbeFailures)
	return fmt.Sprintf("%s while no event stream watches the session, timeout %v; %d failures in a row end the connection; "+
		"429 and 503 with Retry-After count as alive", every, timeout, failures)
}
