package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envInteropDir names an npm --prefix directory where
// @modelcontextprotocol/server-everything is installed (`make interop`
// makes one and sets it).
const envInteropDir = "MCPKEEP_INTEROP_DIR"

const everythingPkg = "@modelcontextprotocol/server-everything"

// everythingEntry is the server's stdio entry point: its package's bin.
func everythingEntry(t *testing.T, dir string) string {
	t.Helper()
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(everythingPkg))
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		t.Fatalf("%s=%s: %v (npm install --prefix %s %s)", envInteropDir, dir, err, dir, everythingPkg)
	}
	var pkg struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatalf("%s/package.json: %v", pkgDir, err)
	}
	var bin string
	if json.Unmarshal(pkg.Bin, &bin) != nil {
		var bins map[string]string
		if err := json.Unmarshal(pkg.Bin, &bins); err != nil || len(bins) == 0 {
			t.Fatalf("%s/package.json: no bin (%s)", pkgDir, pkg.Bin)
		}
		bin = bins["mcp-server-everything"]
		if bin == "" {
			for _, b := range bins {
				bin = b
			}
		}
	}
	t.Logf("%s %s, entry %s", everythingPkg, pkg.Version, bin)
	return filepath.Join(pkgDir, filepath.FromSlash(bin))
}

// interopEra: the TypeScript server speaks protocols up to 2025-11-25.
const interopEra = "2025-11-25"

// TestInteropEverything drives the reference TypeScript server
// (server-everything) three ways with the same go-sdk host: directly,
// through `mcpkeep run` and through `mcpkeep proxy`, and compares every
// feature seen through mcpkeep with what the server gives directly.
func TestInteropEverything(t *testing.T) {
	dir := os.Getenv(envInteropDir)
	if dir == "" {
		t.Skipf("%s is not set: `make interop` installs %s with npm and runs this test", envInteropDir, everythingPkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", envInteropDir, err)
	}
	entry := everythingEntry(t, dir)
	server := []string{node, entry, "stdio"}

	direct := func(t *testing.T) *host {
		cmd := exec.Command(server[0], server[1:]...)
		h := connectHost(t, interopEra, true, cmd, 5*time.Second)
		t.Cleanup(func() {
			if err := h.cs.Close(); err != nil {
				t.Logf("direct close: %v", err)
			}
			if cmd.ProcessState == nil {
				t.Errorf("the server (pid %d) outlived its session", cmd.Process.Pid)
			}
		})
		return h
	}
	viaRun := func(t *testing.T) *host {
		return noServerLeft(startHost(t, interopEra, true, append([]string{"run", "--log-format", "json", "--log-level", "debug",
			"--name", "everything", "--"}, server...)...))
	}
	viaProxy := func(t *testing.T) *host {
		r := &proxyRun{t: t, cfgPath: filepath.Join(t.TempDir(), "mcp.json")}
		r.writeConfig(map[string]any{"mcpServers": map[string]any{
			"everything": map[string]any{"command": server[0], "args": server[1:]},
		}})
		return noServerLeft(startHost(t, interopEra, true, "proxy", "--config", r.cfgPath, "--log-format", "json", "--log-level", "debug"))
	}

	var want map[string]string
	t.Run("direct", func(t *testing.T) {
		want = everythingProfile(t, direct(t), "", "")
		for _, k := range slices.Sorted(maps.Keys(want)) {
			t.Logf("%s: %s", k, clip(want[k]))
		}
	})
	if want == nil {
		t.Fatal("no profile of the server reached directly")
	}
	for _, way := range []struct {
		name  string
		start func(*testing.T) *host
		// prefix of tool and prompt names; server: the log's logger prefix
		prefix, server string
	}{
		{"run", viaRun, "", "everything"},
		{"proxy", viaProxy, "everything__", "everything"},
	} {
		t.Run(way.name, func(t *testing.T) {
			got := everythingProfile(t, way.start(t), way.prefix, way.server)
			for _, k := range slices.Sorted(maps.Keys(want)) {
				switch {
				case got[k] == want[k]:
					t.Logf("same %s", k)
				case expectedDifference(way.name, k, want[k], got[k]):
					t.Logf("differs by design %s: direct %s; %s %s", k, clip(want[k]), way.name, clip(got[k]))
				default:
					t.Errorf("%s differs:\n  direct: %s\n  %s: %s", k, want[k], way.name, got[k])
				}
			}
		})
	}
}

// noServerLeft checks, once mcpkeep stopped, that the process group of
// every server process it started is gone (the stdio transport logs each
// child's exit, at debug, with its pid, which is its group's id).
func noServerLeft(h *host) *host {
	h.t.Cleanup(func() {
		h.stop() // idempotent: startHost's own cleanup runs after this one
		var groups []int
		for _, rec := range h.proxyRun.logs("stdio: child exited") {
			if pid, ok := rec["pid"].(float64); ok {
				groups = append(groups, int(pid))
			}
		}
		if len(groups) == 0 {
			h.t.Errorf("mcpkeep logged no server exit")
		}
		for _, g := range groups {
			if fixture.GroupAlive(g) {
				h.t.Errorf("process group %d of a server outlived mcpkeep", g)
			}
		}
	})
	return h
}

// expectedDifference: what mcpkeep changes on purpose (docs/design.md §14, §15).
func expectedDifference(way, key, direct, got string) bool {
	switch key {
	case "serverInfo":
		return way == "proxy" && strings.HasPrefix(got, "mcpkeep ") // the proxy is itself
	case "instructions":
		// The proxy puts each server's instructions under its name.
		return way == "proxy" && got == "## everything\n\n"+strings.TrimSpace(direct)
	case "capabilities":
		// The proxy advertises everything from the start; run mirrors the
		// server's, every list with listChanged (servers restart).
		return way == "proxy" || got == strings.ReplaceAll(direct, "listChanged=false", "listChanged=true")
	}
	return false
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// everythingProfile is what the host gets of each feature of
// server-everything, in the form the server gives it directly: prefix is
// stripped from tool and prompt names, and server from loggers.
func everythingProfile(t *testing.T, h *host, prefix, server string) map[string]string {
	t.Helper()
	p := map[string]string{}
	errText := func(err error) string { return "error: " + err.Error() }
	ctx := func() (context.Context, context.CancelFunc) { return ctxE2E() }

	init := h.cs.InitializeResult()
	if si := init.ServerInfo; si != nil {
		p["serverInfo"] = si.Name + " " + si.Version
	}
	p["instructions"] = init.Instructions
	p["capabilities"] = capsSummary(init.Capabilities)

	// Tools: names and descriptions.
	var tools []string
	c, cancel := ctx()
	for tl, err := range h.cs.Tools(c, nil) {
		if err != nil {
			tools = append(tools, errText(err))
			break
		}
		tools = append(tools, strings.TrimPrefix(tl.Name, prefix)+": "+tl.Description)
	}
	cancel()
	slices.Sort(tools)
	p["tools"] = strings.Join(tools, "\n")
	call := func(key, tool string, args any) string {
		res, err := h.call(prefix+tool, args)
		if err != nil {
			p[key] = errText(err)
			return p[key]
		}
		p[key] = fmt.Sprintf("isError=%v %s", res.IsError, text(res))
		return p[key]
	}
	call("call echo", "echo", map[string]any{"message": "interop"})
	call("call get-sum", "get-sum", map[string]any{"a": 2, "b": 3})

	// Prompts.
	var prompts []string
	c, cancel = ctx()
	for pr, err := range h.cs.Prompts(c, nil) {
		if err != nil {
			prompts = append(prompts, errText(err))
			break
		}
		var args []string
		for _, a := range pr.Arguments {
			args = append(args, fmt.Sprintf("%s(required=%v)", a.Name, a.Required))
		}
		prompts = append(prompts, strings.TrimPrefix(pr.Name, prefix)+" "+strings.Join(args, ","))
	}
	cancel()
	slices.Sort(prompts)
	p["prompts"] = strings.Join(prompts, "\n")
	for _, g := range []struct {
		name string
		args map[string]string
	}{
		{"simple-prompt", nil},
		{"args-prompt", map[string]string{"city": "Paris", "state": "Texas"}},
		{"completable-prompt", map[string]string{"department": "Sales", "name": "Eve"}},
	} {
		got, err := h.getPrompt(prefix+g.name, g.args)
		if err != nil {
			got = errText(err)
		}
		p["prompt "+g.name] = got
	}

	// Resources and templates.
	var uris []string
	c, cancel = ctx()
	for r, err := range h.cs.Resources(c, nil) {
		if err != nil {
			uris = append(uris, errText(err))
			break
		}
		uris = append(uris, r.URI+" "+r.MIMEType)
	}
	cancel()
	slices.Sort(uris)
	p["resources"] = strings.Join(uris, "\n")
	doc := ""
	for _, u := range uris {
		if uri, _, _ := strings.Cut(u, " "); strings.HasPrefix(uri, "demo://resource/static/document/") {
			doc = uri
			break
		}
	}
	if doc == "" {
		t.Errorf("no static document among the resources %v", uris)
	} else if s, err := h.read(doc); err != nil {
		p["read "+doc] = errText(err)
	} else {
		p["read "+doc] = s
	}
	p["templates"] = strings.Join(h.templates(), "\n")
	// A dynamic resource's text has the time it was made: cut it.
	if s, err := h.read("demo://resource/dynamic/text/3"); err != nil {
		p["read template"] = errText(err)
	} else {
		s, _, _ = strings.Cut(s, " created at ")
		p["read template"] = s
	}

	// Completion (the server offers it).
	complete := func(key string, ref *mcp.CompleteReference, arg, value string, context map[string]string) {
		c, cancel := ctx()
		defer cancel()
		params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
		if context != nil {
			params.Context = &mcp.CompleteContext{Arguments: context}
		}
		res, err := h.cs.Complete(c, params)
		if err != nil {
			p[key] = errText(err)
			return
		}
		p[key] = fmt.Sprint(res.Completion.Values)
	}
	complete("complete prompt", &mcp.CompleteReference{Type: "ref/prompt", Name: prefix + "completable-prompt"}, "department", "S", nil)
	complete("complete prompt with context", &mcp.CompleteReference{Type: "ref/prompt", Name: prefix + "completable-prompt"}, "name", "", map[string]string{"department": "Engineering"})
	complete("complete template", &mcp.CompleteReference{Type: "ref/resource", URI: "demo://resource/dynamic/text/{resourceId}"}, "resourceId", "7", nil)

	// Logging: the level the host set reaches the server; the server logs
	// each subscribe at info.
	logger := func(l string) string {
		if server == "" {
			return l
		}
		if l == server {
			return ""
		}
		if rest, ok := strings.CutPrefix(l, server+"/"); ok {
			return rest
		}
		return "unprefixed:" + l
	}
	h.setLevel("debug")
	c, cancel = ctx()
	err := h.cs.Subscribe(c, &mcp.SubscribeParams{URI: doc})
	cancel()
	if err != nil {
		p["subscribe"] = errText(err)
	} else {
		p["subscribe"] = "ok"
		want := "Received Subscribe Resource request for URI: " + doc
		msgs, ok := h.messages.waitOK(func(l []*mcp.LoggingMessageParams) bool {
			return slices.ContainsFunc(l, func(m *mcp.LoggingMessageParams) bool {
				s, _ := m.Data.(string)
				return strings.HasPrefix(s, want)
			})
		})
		p["log of subscribe"] = "none"
		if ok {
			for _, m := range msgs {
				if s, _ := m.Data.(string); strings.HasPrefix(s, want) {
					p["log of subscribe"] = fmt.Sprintf("%s logger=%q %s", m.Level, logger(m.Logger), strings.TrimSpace(s))
				}
			}
		}
		// The simulated updates go to the session's subscriptions.
		n := h.updates.len()
		call("call toggle-subscriber-updates", "toggle-subscriber-updates", nil)
		if list, ok := h.updates.waitOK(func(l []string) bool { return len(l) > n && slices.Contains(l[n:], doc) }); ok {
			p["resources/updated"] = "received for the subscribed URI"
		} else {
			p["resources/updated"] = fmt.Sprintf("none (received %v)", list[n:])
		}
		call("call toggle-subscriber-updates (off)", "toggle-subscriber-updates", nil)
	}
	// Simulated logging: random levels, every message at debug and up.
	n := h.messages.len()
	call("call toggle-simulated-logging", "toggle-simulated-logging", nil)
	if msgs, ok := h.messages.waitOK(func(l []*mcp.LoggingMessageParams) bool {
		return slices.ContainsFunc(l[n:], func(m *mcp.LoggingMessageParams) bool {
			s, _ := m.Data.(string)
			return strings.Contains(s, "-level message") || strings.Contains(s, "level-message")
		})
	}); ok {
		for _, m := range msgs[n:] {
			if s, _ := m.Data.(string); strings.Contains(s, "level") {
				p["simulated log"] = fmt.Sprintf("received, logger=%q", logger(m.Logger))
				break
			}
		}
	} else {
		p["simulated log"] = "none"
	}
	call("call toggle-simulated-logging (off)", "toggle-simulated-logging", nil)

	// Progress of a long operation, to the host's token.
	params := &mcp.CallToolParams{Name: prefix + "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.4, "steps": 4}}
	token := fmt.Sprintf("interop-%d", tokenSeq.Add(1))
	params.SetProgressToken(token)
	c, cancel = ctx()
	res, err := h.cs.CallTool(c, params)
	cancel()
	if err != nil {
		p["call trigger-long-running-operation"] = errText(err)
	} else {
		p["call trigger-long-running-operation"] = text(res)
	}
	steps := func(l []*mcp.ProgressNotificationParams) (out []string) {
		for _, q := range l {
			if q.ProgressToken == token {
				out = append(out, fmt.Sprintf("%v/%v", q.Progress, q.Total))
			}
		}
		return out
	}
	list, _ := h.progress.waitOK(func(l []*mcp.ProgressNotificationParams) bool { return len(steps(l)) >= 4 })
	p["progress"] = fmt.Sprint(steps(list))

	// Sampling, elicitation and roots, answered by the host's handlers.
	call("call trigger-sampling-request", "trigger-sampling-request", map[string]any{"prompt": "interop", "maxTokens": 10})
	call("call trigger-elicitation-request", "trigger-elicitation-request", nil)
	// The server asks for the roots 350 ms after initialized; wait for them.
	deadline := time.Now().Add(e2eDeadline)
	for {
		got := call("call get-roots-list", "get-roots-list", nil)
		if strings.Contains(got, hostRoot) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

func capsSummary(c *mcp.ServerCapabilities) string {
	if c == nil {
		return "none"
	}
	var parts []string
	if c.Tools != nil {
		parts = append(parts, fmt.Sprintf("tools(listChanged=%v)", c.Tools.ListChanged))
	}
	if c.Prompts != nil {
		parts = append(parts, fmt.Sprintf("prompts(listChanged=%v)", c.Prompts.ListChanged))
	}
	if c.Resources != nil {
		parts = append(parts, fmt.Sprintf("resources(listChanged=%v,subscribe=%v)", c.Resources.ListChanged, c.Resources.Subscribe))
	}
	if c.Logging != nil {
		parts = append(parts, "logging")
	}
	if c.Completions != nil {
		parts = append(parts, "completions")
	}
	if len(c.Experimental) > 0 {
		parts = append(parts, fmt.Sprintf("experimental%v", slices.Sorted(maps.Keys(c.Experimental))))
	}
	return strings.Join(parts, " ")
}
