package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The whole protocol through `mcpkeep proxy` (docs/design.md §14) and `mcpkeep
// run` (§15), end to end: a go-sdk client as the host, on each protocol
// era, over a real mcpkeep process and real fixture processes, before and
// after a fixture is SIGKILLed and respawned under the host's unchanged
// session.

// eras are the protocol versions a host negotiates: the go-sdk's default
// (per-request, SEP-2575) and the last legacy (stateful) one.
var eras = []string{"2026-07-28", "2025-11-25"}

// hostRoot is the root a host with handlers offers from the start;
// hostRoot2 the one it adds later (notifications/roots/list_changed).
const (
	hostRoot  = "file:///e2e/host-root"
	hostRoot2 = "file:///e2e/host-root-2"
)

// events is what a host handler received, in order, with a wakeup per
// event so tests wait without polling.
type events[T any] struct {
	mu   sync.Mutex
	list []T
	wake chan struct{}
}

func newEvents[T any]() *events[T] { return &events[T]{wake: make(chan struct{}, 1)} }

func (e *events[T]) add(v T) {
	e.mu.Lock()
	e.list = append(e.list, v)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *events[T]) all() []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

func (e *events[T]) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

// wait waits until ok holds for the events so far (at most e2eDeadline).
func (e *events[T]) wait(t *testing.T, what string, ok func([]T) bool) []T {
	t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for {
		if list := e.all(); ok(list) {
			return list
		}
		select {
		case <-e.wake:
		case <-deadline.C:
			t.Fatalf("never %s; received %d: %v", what, e.len(), describeEvents(e.all()))
		}
	}
}

func describeEvents[T any](list []T) string {
	var b strings.Builder
	for i, v := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		if lm, ok := any(v).(*mcp.LoggingMessageParams); ok {
			fmt.Fprintf(&b, "{%s %s %v}", lm.Level, lm.Logger, lm.Data)
			continue
		}
		if p, ok := any(v).(*mcp.ProgressNotificationParams); ok {
			fmt.Fprintf(&b, "{%v %v/%v}", p.ProgressToken, p.Progress, p.Total)
			continue
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

// waitOK is wait that reports a timeout instead of failing.
func (e *events[T]) waitOK(ok func([]T) bool) ([]T, bool) {
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for {
		if list := e.all(); ok(list) {
			return list, true
		}
		select {
		case <-e.wake:
		case <-deadline.C:
			return e.all(), false
		}
	}
}

// waitLen waits for at least n events.
func (e *events[T]) waitLen(t *testing.T, what string, n int) []T {
	t.Helper()
	return e.wait(t, fmt.Sprintf("%s (%d)", what, n), func(l []T) bool { return len(l) >= n })
}

// host is the go-sdk host of one mcpkeep process (proxy or run); proxyRun
// (proxy_e2e_test.go) is its process, stop and log helpers.
type host struct {
	*proxyRun
	era      string
	handlers bool
	client   *mcp.Client

	prompts   *events[struct{}]                  // notifications/prompts/list_changed
	resources *events[struct{}]                  // notifications/resources/list_changed
	updates   *events[string]                    // notifications/resources/updated URIs
	messages  *events[*mcp.LoggingMessageParams] // notifications/message
	progress  *events[*mcp.ProgressNotificationParams]
	samples   *events[string] // prompts the host's sampling handler answered
	elicits   *events[string] // messages the host's elicitation handler answered
	acked     *events[string] // 2026-07-28: resource subscriptions the proxy acknowledged
	roots     []string        // the host's roots, in order
}

// startHost starts mcpkeep with args (proxy or run) and connects a host on
// era (see connectHost); at cleanup the host leaves and mcpkeep must exit
// 0 with no fixture process left (proxyRun.stop).
func startHost(t *testing.T, era string, handlers bool, args ...string) *host {
	t.Helper()
	h := connectHost(t, era, handlers, cliCommand(t, args...), e2eDeadline)
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("mcpkeep stderr:\n%s", h.stderr)
		}
	})
	return h
}

// connectHost connects a host on era to the stdio server cmd; with
// handlers the host answers sampling, elicitation and roots (offering
// hostRoot), without them it declares no client capability. The caller
// closes the session.
func connectHost(t *testing.T, era string, handlers bool, cmd *exec.Cmd, terminate time.Duration) *host {
	t.Helper()
	r := &proxyRun{t: t, stderr: newNotifyingBuffer(), notes: make(chan struct{}, 256)}
	h := &host{proxyRun: r, era: era, handlers: handlers,
		prompts: newEvents[struct{}](), resources: newEvents[struct{}](), updates: newEvents[string](),
		messages: newEvents[*mcp.LoggingMessageParams](), progress: newEvents[*mcp.ProgressNotificationParams](),
		samples: newEvents[string](), elicits: newEvents[string](), acked: newEvents[string]()}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			r.changes.Add(1)
			select {
			case r.notes <- struct{}{}:
			default:
			}
		},
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { h.prompts.add(struct{}{}) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { h.resources.add(struct{}{}) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			h.updates.add(req.Params.URI)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { h.messages.add(req.Params) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.progress.add(req.Params)
		},
	}
	if handlers {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			h.samples.add(prompt)
			return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled: " + prompt}}, nil
		}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.elicits.add(req.Params.Message)
			content := map[string]any{"answer": "yes to " + req.Params.Message}
			if schema, ok := req.Params.RequestedSchema.(map[string]any); ok {
				if props, ok := schema["properties"].(map[string]any); ok && props["answer"] == nil {
					content = map[string]any{"name": "e2e host"} // another server's form (interop)
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		}
		// The default capabilities declare roots (listChanged).
	} else {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	h.client = mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "0"}, opts)
	// On 2026-07-28 Subscribe does not wait for the subscription to be
	// taken: its acknowledgement says when it is (see subscribe).
	h.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil && method == "notifications/subscriptions/acknowledged" {
				for _, uri := range p.Notifications.ResourceSubscriptions {
					h.acked.add(uri)
				}
			}
			return next(ctx, method, req)
		}
	})
	if handlers {
		h.addRoot(hostRoot)
	}
	cmd.Stderr = r.stderr
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	cs, err := h.client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminate},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect to %s: %v\nstderr:\n%s", cmd.Args, err, r.stderr)
	}
	r.cs, r.cmd = cs, cmd
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		_ = cs.Close()
		t.Fatalf("negotiated protocol %q, want %q", got, era)
	}
	return h
}

func (h *host) addRoot(uri string) {
	h.roots = append(h.roots, uri)
	h.client.AddRoots(&mcp.Root{URI: uri, Name: uri})
}

func (h *host) legacy() bool { return h.era < "2026-07-28" }

// proxyArgs starts `mcpkeep proxy` with the fixture servers a and b.
func proxyArgs(t *testing.T) []string {
	t.Helper()
	servers := map[string]any{}
	for _, name := range []string{"a", "b"} {
		fx := fixtureServer(t, "normal")
		fx["waitForReadyMs"] = 10000 // a request during a's restart waits for it
		servers[name] = fx
	}
	r := &proxyRun{t: t, cfgPath: filepath.Join(t.TempDir(), "mcp.json")}
	r.writeConfig(map[string]any{
		"reconnect":  map[string]any{"initialDelayMs": 50, "maxDelayMs": 500, "maxAttempts": 5},
		"mcpServers": servers,
	})
	return []string{"proxy", "--config", r.cfgPath, "--log-format", "json", "--log-level", "debug"}
}

// runArgs starts `mcpkeep run` with one fixture server named fx.
func runArgs(t *testing.T) []string {
	return []string{"run", "--log-format", "json", "--log-level", "debug", "--name", "fx",
		"--max-attempts", "5", "--initial-delay", "50ms", "--max-delay", "500ms", "--wait-for-ready", "10s",
		"--", testExe(t), "fixture", "--mode", "normal"}
}

// target is one supervised server as the host sees it: its name (in
// logger names and logs) and the prefix of its tools and prompts.
type target struct{ server, prefix string }

func (tg target) name(s string) string { return tg.prefix + s }

func ctxE2E() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e2eDeadline)
}

// callText calls a tool and returns its text, failing on any error.
func (h *host) callText(name string, args any) string {
	h.t.Helper()
	res, err := h.call(name, args)
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		h.t.Fatalf("%s: tool error %q", name, text(res))
	}
	return text(res)
}

func (h *host) promptNames() []string {
	h.t.Helper()
	ctx, cancel := ctxE2E()
	defer cancel()
	var names []string
	for p, err := range h.cs.Prompts(ctx, nil) {
		if err != nil {
			h.t.Fatalf("prompts/list: %v", err)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func (h *host) resourceURIs() []string {
	h.t.Helper()
	ctx, cancel := ctxE2E()
	defer cancel()
	var uris []string
	for r, err := range h.cs.Resources(ctx, nil) {
		if err != nil {
			h.t.Fatalf("resources/list: %v", err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}

func (h *host) templates() []string {
	h.t.Helper()
	ctx, cancel := ctxE2E()
	defer cancel()
	var out []string
	for rt, err := range h.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			h.t.Fatalf("resources/templates/list: %v", err)
		}
		out = append(out, rt.URITemplate)
	}
	slices.Sort(out)
	return out
}

func (h *host) read(uri string) (string, error) {
	ctx, cancel := ctxE2E()
	defer cancel()
	res, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Contents {
		if c.URI != uri {
			return "", fmt.Errorf("contents of %q name %q", uri, c.URI)
		}
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

func (h *host) readText(uri string) string {
	h.t.Helper()
	s, err := h.read(uri)
	if err != nil {
		h.t.Fatalf("read %s: %v", uri, err)
	}
	return s
}

func (h *host) getPrompt(name string, args map[string]string) (string, error) {
	ctx, cancel := ctxE2E()
	defer cancel()
	res, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range res.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), nil
}

func (h *host) complete(ref *mcp.CompleteReference, arg, value string) ([]string, error) {
	ctx, cancel := ctxE2E()
	defer cancel()
	res, err := h.cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
	if err != nil {
		return nil, err
	}
	return res.Completion.Values, nil
}

// fixturePid is the process id of the fixture that serves
// fixture://static/pid (in the proxy: the first server, a).
func (h *host) fixturePid() int {
	h.t.Helper()
	s := h.readText(fixture.PidURI)
	pid, err := strconv.Atoi(s)
	if err != nil {
		h.t.Fatalf("%s: %q is not a pid", fixture.PidURI, s)
	}
	return pid
}

// waitRecovered waits until server logged "recovered" n times.
func (h *host) waitRecovered(server string, n int) {
	h.t.Helper()
	deadline := time.NewTimer(e2eDeadline)
	defer deadline.Stop()
	for h.logsFor("recovered", server) < n {
		select {
		case <-h.stderr.wrote:
		case <-deadline.C:
			h.t.Fatalf("%s never recovered (%d recovered logs, want %d)", server, h.logsFor("recovered", server), n)
		}
	}
}

// killFixture SIGKILLs the fixture serving fixture://static/pid, waits for
// its server to recover, and returns the old and new pids.
func (h *host) killFixture(server string) (old, fresh int) {
	h.t.Helper()
	old = h.fixturePid()
	// The fixture answered, so its "pid=" line is on its way to the
	// proxy's stderr: wait for it (waitPids) rather than read too early.
	if h.waitPidLine(old); !slices.Contains(h.pids(), old) {
		h.t.Fatalf("pid %d (from %s) is not one of the fixtures the proxy started: %v", old, fixture.PidURI, h.pids())
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		h.t.Fatal(err)
	}
	h.waitRecovered(server, 1)
	fresh = h.fixturePid()
	if fresh == old {
		h.t.Fatalf("%s still served by pid %d after its SIGKILL", server, old)
	}
	if fixture.Alive(old) {
		h.t.Errorf("the killed fixture %d is still alive", old)
	}
	return old, fresh
}

// --- checks, each of one feature of docs/design.md §14 ---

// checkUpstreamCaps: tools, prompts, resources (subscribe), logging,
// completions, each list with listChanged.
func checkUpstreamCaps(t *testing.T, caps *mcp.ServerCapabilities) {
	t.Helper()
	switch {
	case caps == nil:
		t.Fatal("no capabilities")
	case caps.Tools == nil || !caps.Tools.ListChanged:
		t.Errorf("tools %+v: want listChanged", caps.Tools)
	case caps.Prompts == nil || !caps.Prompts.ListChanged:
		t.Errorf("prompts %+v: want listChanged", caps.Prompts)
	case caps.Resources == nil || !caps.Resources.ListChanged || !caps.Resources.Subscribe:
		t.Errorf("resources %+v: want listChanged and subscribe", caps.Resources)
	case caps.Logging == nil:
		t.Error("logging not advertised")
	case caps.Completions == nil:
		t.Error("completions not advertised")
	}
}

// checkPrompts: the fixture's prompts listed under tg's names, and got
// with arguments (a server's error passes through).
func checkPrompts(h *host, tgs ...target) {
	h.t.Helper()
	names := h.promptNames()
	for _, tg := range tgs {
		for _, p := range []string{"greet", "plain"} {
			if !slices.Contains(names, tg.name(p)) {
				h.t.Errorf("prompts %v: no %s", names, tg.name(p))
			}
		}
		if got, err := h.getPrompt(tg.name("greet"), map[string]string{"name": "Ann", "style": "pirate"}); err != nil || got != "Ahoy, Ann!" {
			h.t.Errorf("get %s(Ann, pirate): %q, %v; want \"Ahoy, Ann!\"", tg.name("greet"), got, err)
		}
		if got, err := h.getPrompt(tg.name("greet"), map[string]string{"name": "Bo"}); err != nil || got != "Hello, Bo!" {
			h.t.Errorf("get %s(Bo): %q, %v; want \"Hello, Bo!\"", tg.name("greet"), got, err)
		}
		if got, err := h.getPrompt(tg.name("plain"), nil); err != nil || got != "This is the plain prompt." {
			h.t.Errorf("get %s: %q, %v", tg.name("plain"), got, err)
		}
		if _, err := h.getPrompt(tg.name("greet"), nil); err == nil || !strings.Contains(err.Error(), `missing required argument "name"`) {
			h.t.Errorf("get %s without name: %v, want the server's invalid-params error", tg.name("greet"), err)
		}
	}
	if _, err := h.getPrompt("nosuch__prompt", nil); err == nil {
		h.t.Error("get of an unknown prompt succeeded")
	}
}

// checkResources: the fixture's resources and template listed with URIs
// unchanged (a URI two servers list is listed once), and read.
func checkResources(h *host) {
	h.t.Helper()
	want := []string{fixture.CounterURI, fixture.HelloURI, fixture.PidURI}
	if got := h.resourceURIs(); !slices.Equal(got, want) {
		h.t.Errorf("resources %v, want %v", got, want)
	}
	if got := h.templates(); !slices.Equal(got, []string{"fixture://item/{id}"}) {
		h.t.Errorf("templates %v, want [fixture://item/{id}]", got)
	}
	if got := h.readText(fixture.HelloURI); got != "hello" {
		h.t.Errorf("read %s: %q", fixture.HelloURI, got)
	}
	if got := h.readText("fixture://item/7"); got != "item 7" {
		h.t.Errorf("read fixture://item/7: %q", got)
	}
	if _, err := h.read("fixture://item/99"); err == nil {
		h.t.Error("read fixture://item/99 succeeded; the fixture has no item 99")
	}
	_, err := h.read("nosuch://x")
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcp.CodeResourceNotFound || !strings.Contains(string(werr.Data), "nosuch://x") {
		h.t.Errorf("read of an unknown URI: %v, want resource-not-found naming it", err)
	}
}

// checkCompletion: completion of greet's style (by the prompt's public
// name) and of the template's id, routed with the argument unchanged.
func checkCompletion(h *host, tg target) {
	h.t.Helper()
	got, err := h.complete(&mcp.CompleteReference{Type: "ref/prompt", Name: tg.name("greet")}, "style", "ca")
	if err != nil || !slices.Equal(got, []string{"casual"}) {
		h.t.Errorf("complete %s style \"ca\": %v, %v; want [casual]", tg.name("greet"), got, err)
	}
	got, err = h.complete(&mcp.CompleteReference{Type: "ref/prompt", Name: tg.name("greet")}, "style", "")
	if err != nil || !slices.Equal(got, []string{"formal", "casual", "pirate"}) {
		h.t.Errorf("complete %s style \"\": %v, %v; want [formal casual pirate]", tg.name("greet"), got, err)
	}
	got, err = h.complete(&mcp.CompleteReference{Type: "ref/resource", URI: "fixture://item/{id}"}, "id", "2")
	if err != nil || !slices.Equal(got, []string{"2", "20"}) {
		h.t.Errorf("complete fixture://item/{id} id \"2\": %v, %v; want [2 20]", got, err)
	}
}

// checkHostRequests: the server's sampling, elicitation and roots go to
// the host's handlers and back; without handlers the tools report the
// capability the host did not declare.
func checkHostRequests(h *host, tg target) {
	h.t.Helper()
	if !h.handlers {
		for _, c := range []struct {
			tool, capability string
			args             any
		}{
			{"sample", "sampling", map[string]any{"prompt": "p"}},
			{"elicit", "elicitation", map[string]any{"message": "m"}},
			{"roots", "roots", nil},
		} {
			tool, capability := c.tool, c.capability
			res, err := h.call(tg.name(tool), c.args)
			if err != nil {
				h.t.Errorf("%s: %v", tg.name(tool), err)
				continue
			}
			want := fmt.Sprintf("the client did not declare the %q capability", capability)
			if !res.IsError || !strings.Contains(text(res), want) {
				h.t.Errorf("%s of a host without %s: %q (isError %v), want a tool error saying %s", tg.name(tool), capability, text(res), res.IsError, want)
			}
		}
		return
	}
	prompt := "sample via " + tg.server
	if got := h.callText(tg.name("sample"), map[string]any{"prompt": prompt}); got != "sampled: "+prompt {
		h.t.Errorf("%s: %q, want the host's answer %q", tg.name("sample"), got, "sampled: "+prompt)
	}
	if !slices.Contains(h.samples.all(), prompt) {
		h.t.Errorf("the host's sampling handler never saw %q: %v", prompt, h.samples.all())
	}
	msg := "elicit via " + tg.server
	want := fmt.Sprintf(`{"action":"accept","content":{"answer":"yes to %s"}}`, msg)
	if got := h.callText(tg.name("elicit"), map[string]any{"message": msg}); got != want {
		h.t.Errorf("%s: %q, want %q", tg.name("elicit"), got, want)
	}
	if !slices.Contains(h.elicits.all(), msg) {
		h.t.Errorf("the host's elicitation handler never saw %q: %v", msg, h.elicits.all())
	}
	if got, want := h.callText(tg.name("roots"), nil), strings.Join(h.roots, "\n"); got != want {
		h.t.Errorf("%s: %q, want the host's roots %q", tg.name("roots"), got, want)
	}
}

// checkRootsChanged: the host's notifications/roots/list_changed reaches
// every server, which then lists the host's new roots. On 2026-07-28 there
// is no such notification (roots are asked for at each use, through the
// host's call in flight): the servers list the new roots at once.
func checkRootsChanged(h *host, tgs ...target) {
	h.t.Helper()
	if !h.legacy() {
		h.addRoot(hostRoot2)
		for _, tg := range tgs {
			if got, want := h.callText(tg.name("roots"), nil), strings.Join(h.roots, "\n"); got != want {
				h.t.Errorf("%s after the host added a root: %q, want %q", tg.name("roots"), got, want)
			}
		}
		return
	}
	before := map[string]int{}
	for _, tg := range tgs {
		before[tg.server], _ = strconv.Atoi(h.callText(tg.name("roots-changed"), map[string]any{"min": 0}))
	}
	h.addRoot(hostRoot2)
	for _, tg := range tgs {
		min := before[tg.server] + 1
		ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tg.name("roots-changed"), Arguments: map[string]any{"min": min}})
		cancel()
		if err != nil || res.IsError {
			h.t.Errorf("%s: the host's roots/list_changed never reached %s (%d before): %v %v", tg.name("roots-changed"), tg.server, before[tg.server], err, res)
			return
		}
		want := strings.Join(h.roots, "\n")
		if got := h.callText(tg.name("roots"), nil); got != want {
			h.t.Errorf("%s after the host added a root: %q, want %q", tg.name("roots"), got, want)
		}
	}
}

// setLevel sets the host's logging level (legacy: logging/setLevel).
func (h *host) setLevel(level mcp.LoggingLevel) {
	h.t.Helper()
	ctx, cancel := ctxE2E()
	defer cancel()
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		h.t.Fatalf("logging/setLevel %s: %v", level, err)
	}
}

// logCall calls tg's log tool; a metaLevel rides on the request's _meta
// (protocol 2026-07-28's own way to set the level, SEP-2575).
func (h *host) logCall(tg target, level, msg string, metaLevel mcp.LoggingLevel) string {
	h.t.Helper()
	p := &mcp.CallToolParams{Name: tg.name("log"), Arguments: map[string]any{"level": level, "text": msg}}
	if metaLevel != "" {
		p.Meta = mcp.Meta{mcp.MetaKeyLogLevel: string(metaLevel)}
	}
	ctx, cancel := ctxE2E()
	defer cancel()
	res, err := h.cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		h.t.Fatalf("%s: %v %v", tg.name("log"), err, res)
	}
	return text(res)
}

// checkLogging: the level the host set (logging/setLevel: info; or
// metaLevel on the request) is in effect on tg's server (the log tool
// replies it), its messages reach the host with logger "<server>/fixture",
// and those below the level do not.
func checkLogging(h *host, tg target, tag string, metaLevel mcp.LoggingLevel) {
	h.t.Helper()
	want := cmp.Or(string(metaLevel), "info")
	below, above := "below "+tag+" "+tg.server, "above "+tag+" "+tg.server
	if got := h.logCall(tg, "debug", below, metaLevel); got != want {
		h.t.Errorf("%s: level in effect %q, want %s (the host's)", tg.name("log"), got, want)
	}
	if got := h.logCall(tg, "warning", above, metaLevel); got != want {
		h.t.Errorf("%s: level in effect %q, want %s (the host's)", tg.name("log"), got, want)
	}
	msgs, ok := h.messages.waitOK(func(l []*mcp.LoggingMessageParams) bool {
		return slices.ContainsFunc(l, func(m *mcp.LoggingMessageParams) bool { return m.Data == above })
	})
	if !ok {
		h.t.Errorf("the host never received %q from %s; received %s", above, tg.server, describeEvents(msgs))
	}
	for _, m := range msgs {
		switch m.Data {
		case above:
			if m.Logger != tg.server+"/"+fixture.LoggerName || m.Level != "warning" {
				h.t.Errorf("message %q: logger %q level %q, want %q warning", above, m.Logger, m.Level, tg.server+"/"+fixture.LoggerName)
			}
		case below:
			h.t.Errorf("message %q below the host's level was relayed", below)
		}
	}
}

// checkProgress: the server's progress of slow calls reaches the host
// under the host's own token, every step of it. A call with steps 50 ms
// apart must bring all but the last in any case; the last step is sent
// right before the reply (and may reach mcpkeep after it), so several quick
// calls make a lost last step show.
func checkProgress(h *host, tg target) {
	h.t.Helper()
	const steps = 3
	slow := func(ms int) string {
		token := "progress-" + tg.server + "-" + strconv.FormatInt(tokenSeq.Add(1), 10)
		p := &mcp.CallToolParams{Name: tg.name("slow"), Arguments: map[string]any{"steps": steps, "ms": ms}}
		p.SetProgressToken(token)
		ctx, cancel := ctxE2E()
		defer cancel()
		res, err := h.cs.CallTool(ctx, p)
		if err != nil || res.IsError || text(res) != "done" {
			h.t.Fatalf("%s: %v %v", tg.name("slow"), err, res)
		}
		return token
	}
	progressOf := func(l []*mcp.ProgressNotificationParams, tok string) (out []float64) {
		for _, p := range l {
			if p.ProgressToken == tok {
				if p.Total != steps {
					h.t.Errorf("progress %v of %s: total %v, want %d", p.Progress, tok, p.Total, steps)
				}
				out = append(out, p.Progress)
			}
		}
		return out
	}
	tok := slow(50)
	got := progressOf(h.progress.wait(h.t, "received progress 1 and 2 of "+tok, func(l []*mcp.ProgressNotificationParams) bool {
		return len(progressOf(l, tok)) >= steps-1
	}), tok)
	if !slices.Equal(got[:steps-1], []float64{1, 2}) {
		h.t.Errorf("progress of %s (%s) reached the host as %v, want 1, 2, 3", tg.name("slow"), tok, got)
	}
	tokens := []string{tok}
	for range 8 {
		tokens = append(tokens, slow(1))
	}
	all, ok := h.progress.waitOK(func(l []*mcp.ProgressNotificationParams) bool {
		for _, tok := range tokens {
			if len(progressOf(l, tok)) < steps {
				return false
			}
		}
		return true
	})
	for _, tok := range tokens {
		if got := progressOf(all, tok); !slices.Equal(got, []float64{1, 2, 3}) {
			h.t.Errorf("progress of %s (%s) reached the host as %v, want [1 2 3]", tg.name("slow"), tok, got)
		}
	}
	if !ok {
		h.t.Errorf("%s: progress notifications lost on the way to the host", tg.name("slow"))
	}
}

// tokenSeq makes every progress token of the tests unique.
var tokenSeq atomic.Int64

// checkCancel: cancelling the host's call cancels the server's.
func checkCancel(h *host, tg target) {
	h.t.Helper()
	before, _ := strconv.Atoi(h.callText(tg.name("cancelled"), map[string]any{"min": 0}))
	token := "cancel-" + tg.server + "-" + strconv.FormatInt(tokenSeq.Add(1), 10)
	p := &mcp.CallToolParams{Name: tg.name("slow"), Arguments: map[string]any{"steps": 100000, "ms": 20}}
	p.SetProgressToken(token)
	ctx, cancel := ctxE2E()
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, p)
		done <- err
	}()
	h.progress.wait(h.t, "received progress for "+token, func(l []*mcp.ProgressNotificationParams) bool {
		return slices.ContainsFunc(l, func(p *mcp.ProgressNotificationParams) bool { return p.ProgressToken == token })
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		h.t.Errorf("the cancelled call returned %v, want context.Canceled", err)
	}
	got := h.callText(tg.name("cancelled"), map[string]any{"min": before + 1})
	if got != strconv.Itoa(before+1) {
		h.t.Errorf("%s: %s, want %d", tg.name("cancelled"), got, before+1)
	}
}

// subscribe subscribes the host to fixture://static/counter and waits
// until tg's server has the subscription.
func (h *host) subscribe(tg target) {
	h.t.Helper()
	ctx, cancel := ctxE2E()
	defer cancel()
	if err := h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.CounterURI}); err != nil {
		h.t.Fatalf("subscribe %s: %v", fixture.CounterURI, err)
	}
	if h.era >= "2026-07-28" {
		// Subscribe returned before the proxy took the subscription: an
		// update before the acknowledgement would reach no subscriber.
		h.acked.wait(h.t, "the proxy acknowledged the subscription to "+fixture.CounterURI, func(l []string) bool {
			return slices.Contains(l, fixture.CounterURI)
		})
	}
	if got := h.callText(tg.name("subscriptions"), map[string]any{"min": 1}); got != fixture.CounterURI {
		h.t.Errorf("%s: %q, want %s", tg.name("subscriptions"), got, fixture.CounterURI)
	}
}

// checkUpdated: a bump on tg's server reaches the subscribed host as
// notifications/resources/updated, and the read sees the new value.
func checkUpdated(h *host, tg target) {
	h.t.Helper()
	n := len(h.updates.all())
	v := h.callText(tg.name("bump"), nil)
	h.updates.wait(h.t, "received resources/updated after "+tg.name("bump"), func(l []string) bool {
		return len(l) > n && slices.Contains(l[n:], fixture.CounterURI)
	})
	if got := h.readText(fixture.CounterURI); got != v {
		h.t.Errorf("read %s after bump: %q, want %q", fixture.CounterURI, got, v)
	}
}

// checkListChanged: a real change of tg's prompts and resources
// (add-prompt, add-resource) reaches the host as one list_changed each, an
// unchanged relist (adding the same again: the server notifies, nothing
// changes) as none; the host's counts before are p0 and r0, so whatever
// the host heard of before (a restart with the same lists must be
// nothing) counts against it.
func checkListChanged(h *host, tg target, p0, r0 int) {
	h.t.Helper()
	prompt, uri := "added-"+tg.server, "fixture://added/"+tg.server
	h.callText(tg.name("add-prompt"), map[string]any{"name": prompt})
	h.prompts.waitLen(h.t, "received prompts/list_changed after add-prompt", p0+1)
	if names := h.promptNames(); !slices.Contains(names, tg.name(prompt)) {
		h.t.Errorf("prompts %v after add-prompt: no %s", names, tg.name(prompt))
	}
	if got, err := h.getPrompt(tg.name(prompt), nil); err != nil || got != "This is the added prompt "+prompt+"." {
		h.t.Errorf("get %s: %q, %v", tg.name(prompt), got, err)
	}
	h.callText(tg.name("add-resource"), map[string]any{"uri": uri})
	h.resources.waitLen(h.t, "received resources/list_changed after add-resource", r0+1)
	if uris := h.resourceURIs(); !slices.Contains(uris, uri) {
		h.t.Errorf("resources %v after add-resource: no %s", uris, uri)
	}
	if got := h.readText(uri); got != "added "+uri {
		h.t.Errorf("read %s: %q", uri, got)
	}

	// The same again: the server notifies and the proxy relists, with
	// nothing to say. The settle keeps the server's debounce (10 ms) from
	// folding this notification into the next one's.
	h.callText(tg.name("add-prompt"), map[string]any{"name": prompt})
	h.callText(tg.name("add-resource"), map[string]any{"uri": uri})
	time.Sleep(200 * time.Millisecond)
	// A real change after it: its list_changed follows any of the relist.
	h.callText(tg.name("add-prompt"), map[string]any{"name": prompt + "-2"})
	h.callText(tg.name("add-resource"), map[string]any{"uri": uri + "-2"})
	h.prompts.waitLen(h.t, "received prompts/list_changed after the second add-prompt", p0+2)
	h.resources.waitLen(h.t, "received resources/list_changed after the second add-resource", r0+2)
	h.wait(h.t, func() bool {
		return slices.Contains(h.promptNames(), tg.name(prompt+"-2")) && slices.Contains(h.resourceURIs(), uri+"-2")
	})
	time.Sleep(100 * time.Millisecond) // a late one (the SDK debounces 10 ms) would be counted
	if n := h.prompts.len(); n != p0+2 {
		h.t.Errorf("%d prompts/list_changed, want %d: an unchanged relist (or restart) was announced", n-p0, 2)
	}
	if n := h.resources.len(); n != r0+2 {
		h.t.Errorf("%d resources/list_changed, want %d: an unchanged relist (or restart) was announced", n-r0, 2)
	}
}

// wait polls cond (a list after a list_changed that already arrived) up
// to e2eDeadline.
func (h *host) wait(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProtocolProxy: a host with sampling, elicitation and roots handlers
// through `mcpkeep proxy` with fixture servers a and b, on each era: every
// feature of docs/design.md §14, then again after a's process is SIGKILLed and
// respawned, under the host's unchanged session.
func TestProtocolProxy(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			h := startHost(t, era, true, proxyArgs(t)...)
			a, b := target{"a", "a__"}, target{"b", "b__"}

			init := h.cs.InitializeResult()
			checkUpstreamCaps(t, init.Capabilities)
			if want := "## a\n\n" + fixture.Instructions + "\n\n## b\n\n" + fixture.Instructions; init.Instructions != want {
				t.Errorf("instructions %q, want %q", init.Instructions, want)
			}
			if want := append(prefixed("a", fixtureTools), prefixed("b", fixtureTools)...); !slices.Equal(h.toolNames(), want) {
				t.Errorf("tools %v, want %v", h.toolNames(), want)
			}
			checkPrompts(h, a, b)
			checkResources(h)
			checkCompletion(h, a)
			checkCompletion(h, b)
			checkHostRequests(h, a)
			checkHostRequests(h, b)
			checkRootsChanged(h, a, b)
			h.setLevel("info") // on 2026-07-28 too: the go-sdk sends it, the proxy takes it
			checkLogging(h, a, "before", "")
			checkLogging(h, b, "before", "")
			checkProgress(h, a)
			checkCancel(h, a)
			h.subscribe(a) // the first server that lists the URI
			checkUpdated(h, a)

			tools0, p0, r0 := h.changes.Load(), h.prompts.len(), h.resources.len()
			h.killFixture("a")
			checkUpdated(h, a)
			checkLogging(h, a, "after", "")
			checkPrompts(h, a)
			checkResources(h)
			checkCompletion(h, a)
			checkHostRequests(h, a)
			checkProgress(h, a)
			checkCancel(h, a)
			// a came back with the same lists: nothing for the host to hear.
			checkListChanged(h, b, p0, r0)
			if n := h.changes.Load(); n != tools0 {
				t.Errorf("%d tools/list_changed since a's restart, want none", n-tools0)
			}
		})
	}
}

// TestProtocolProxyBareHost: a host without sampling, elicitation and
// roots: the servers are not told of them, so the fixture's tools report
// the capability missing.
func TestProtocolProxyBareHost(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			h := startHost(t, era, false, proxyArgs(t)...)
			checkHostRequests(h, target{"a", "a__"})
			checkHostRequests(h, target{"b", "b__"})
			if !h.legacy() {
				// A host that never sends logging/setLevel sets the level
				// of each request in its _meta (SEP-2575).
				checkLogging(h, target{"a", "a__"}, "meta", "notice")
			}
		})
	}
}

// TestProtocolRun: the same through `mcpkeep run` (one server under its
// own names), whose initialize mirrors the server's serverInfo,
// capabilities and instructions.
func TestProtocolRun(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			h := startHost(t, era, true, runArgs(t)...)
			fx := target{"fx", ""}

			init := h.cs.InitializeResult()
			checkUpstreamCaps(t, init.Capabilities)
			if si := init.ServerInfo; si == nil || si.Name != "mcpkeep-fixture" || si.Version != "1.0.0" {
				t.Errorf("serverInfo %+v, want the fixture's (mcpkeep-fixture 1.0.0)", si)
			}
			if init.Instructions != fixture.Instructions {
				t.Errorf("instructions %q, want the fixture's %q", init.Instructions, fixture.Instructions)
			}
			if want := slices.Sorted(slices.Values(fixtureTools)); !slices.Equal(h.toolNames(), want) {
				t.Errorf("tools %v, want the fixture's own names %v", h.toolNames(), want)
			}
			checkPrompts(h, fx)
			checkResources(h)
			checkCompletion(h, fx)
			checkHostRequests(h, fx)
			checkRootsChanged(h, fx)
			h.setLevel("info")
			checkLogging(h, fx, "before", "")
			checkProgress(h, fx)
			checkCancel(h, fx)
			h.subscribe(fx)
			checkUpdated(h, fx)

			tools0, p0, r0 := h.changes.Load(), h.prompts.len(), h.resources.len()
			h.killFixture("fx")
			checkUpdated(h, fx)
			checkLogging(h, fx, "after", "")
			checkPrompts(h, fx)
			checkResources(h)
			checkCompletion(h, fx)
			checkHostRequests(h, fx)
			checkProgress(h, fx)
			checkCancel(h, fx)
			checkListChanged(h, fx, p0, r0)
			if n := h.changes.Load(); n != tools0 {
				t.Errorf("%d tools/list_changed since the restart, want none", n-tools0)
			}
		})
	}
}

// TestProtocolRunBareHost: run with a host without sampling, elicitation
// and roots.
func TestProtocolRunBareHost(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			h := startHost(t, era, false, runArgs(t)...)
			checkHostRequests(h, target{"fx", ""})
			if !h.legacy() {
				checkLogging(h, target{"fx", ""}, "meta", "notice")
			}
		})
	}
}

// TestRunUsage: bad flag values are usage errors naming the flag (checked
// by the config parser), as are an unknown flag and a missing command;
// --help lists the flags.
func TestRunUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-attempts", "abc", "--", "server"}, "--max-attempts"},
		{[]string{"run", "--max-attempts", "0", "--", "server"}, "--max-attempts"},
		{[]string{"run", "--initial-delay", "x", "--", "server"}, "--initial-delay"},
		{[]string{"run", "--max-delay", "soon", "--", "server"}, "--max-delay"},
		{[]string{"run", "--connect-timeout", "-5", "--", "server"}, "--connect-timeout"},
		{[]string{"run", "--wait-for-ready", "x", "--", "server"}, "--wait-for-ready"},
		{[]string{"run", "--env", "NOEQUALS", "--", "server"}, "-env"},
		{[]string{"run", "--header", "A=b", "--", "server"}, "--header"},
		{[]string{"run", "--eras", "both", "--", "server"}, "--eras"},
		{[]string{"run", "--no-such-flag", "--", "server"}, "no-such-flag"},
		{[]string{"run"}, "give a command after --"},
		{[]string{"run", "--max-attempts", "3"}, "give a command after --"},
		{[]string{"run", "--url", "http://127.0.0.1:1/mcp", "--", "server"}, "not both"},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want 2 and a message naming %s", c.args, code, out, errOut, c.want)
		}
	}
	code, out, errOut := runCLI("run", "--help")
	if code != 0 || errOut != "" {
		t.Errorf("run --help: code %d, stderr %q", code, errOut)
	}
	for _, flag := range []string{"--url", "--name", "--max-attempts", "--initial-delay", "--max-delay", "--connect-timeout",
		"--wait-for-ready", "--init-wait", "--env", "--cwd", "--header", "--log-format", "--log-level", "--trace",
		"--lazy", "--idle-stop", "--eras", "--cache-dir", "--no-cache"} {
		if !strings.Contains(out, "  "+flag+" ") {
			t.Errorf("run --help does not list %s:\n%s", flag, out)
		}
	}
	if !strings.Contains(out, "run [flags] -- COMMAND") {
		t.Errorf("run --help has no synopsis:\n%s", out)
	}
}
