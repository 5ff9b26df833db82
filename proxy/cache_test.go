package proxy

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureOpener runs the fixture in mode in process, one Run per
// generation over pipes.
type fixtureOpener struct{ mode fixture.Mode }

func (o fixtureOpener) Open(_ context.Context, _ uint64) (transport.Generation, error) {
	cr, sw := io.Pipe() // what the fixture writes, the client reads
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	g := &fixtureGen{t: &mcp.IOTransport{Reader: cr, Writer: cw}, cancel: cancel, gone: make(chan struct{})}
	go func() {
		defer close(g.gone)
		_ = fixture.Run(ctx, o.mode, sr, sw, io.Discard)
		sr.Close()
		sw.Close()
	}()
	return g, nil
}

type fixtureGen struct {
	t      *mcp.IOTransport
	cancel context.CancelFunc
	gone   chan struct{}
}

func (g *fixtureGen) Transport() mcp.Transport { return g.t }
func (g *fixtureGen) Gone() <-chan struct{}    { return g.gone }
func (g *fixtureGen) Terminate()               { g.cancel(); g.t.Writer.Close(); g.t.Reader.Close() }
func (g *fixtureGen) Exit() transport.ExitInfo { return transport.ExitInfo{} }

// cacheRun is one proxy over the caps-tools fixture with a catalog cache
// in dir, and one stdio-shaped host.
type cacheRun struct {
	t       *testing.T
	srv     *Server
	cs      *mcp.ClientSession
	changed chan struct{} // tools/list_changed
	stop    func()
}

// capsHost is a host declaring sampling, elicitation and roots (all) or
// none of them.
func capsHost(all bool, changed chan struct{}) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}
	if all {
		o.Capabilities = nil // the SDK's default: roots
		o.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		}
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}
	return o
}

func startCacheRun(t *testing.T, dir string, all bool) *cacheRun {
	t.Helper()
	return startCacheRunWith(t, dir, all, func(*Options) {})
}

func startCacheRunWith(t *testing.T, dir string, all bool, edit func(*Options)) *cacheRun {
	t.Helper()
	cfg := mustConfig(t, map[string]any{"mcpServers": map[string]any{"caps": map[string]any{"command": "fixture-caps-tools"}}})
	opts := Options{InitWait: testDeadline}
	opts.Pool.Cache = catalogcache.New(dir)
	opts.Pool.Opener = func(config.Server) (transport.Opener, error) {
		return fixtureOpener{fixture.Mode{Kind: fixture.CapsTools}}, nil
	}
	edit(&opts)
	r := &cacheRun{t: t, srv: New(cfg, opts), changed: make(chan struct{}, 1)}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ctx, st) }()
	cctx, ccancel := context.WithTimeout(ctx, testDeadline)
	defer ccancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, capsHost(all, r.changed))
	if all {
		c.AddRoots(&mcp.Root{URI: "file:///host", Name: "host"})
	}
	cs, err := c.Connect(cctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		cancel()
		<-served
		t.Fatalf("host connect: %v", err)
	}
	r.cs = cs
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cs.Close()
		cancel()
		<-served
		sctx, scancel := context.WithTimeout(context.Background(), testDeadline)
		defer scancel()
		if err := r.srv.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

func (r *cacheRun) tools() []string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	res, err := r.cs.ListTools(ctx, nil)
	if err != nil {
		r.t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// waitTools lists the tools at each list_changed until ok, within the
// test deadline.
func (r *cacheRun) waitTools(what string, ok func([]string) bool) []string {
	r.t.Helper()
	deadline := time.After(testDeadline)
	for {
		names := r.tools()
		if ok(names) {
			return names
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.t.Fatalf("%s: never; tools %v", what, names)
		}
	}
}

func (r *cacheRun) call(name string, args map[string]any) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		r.t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError {
		r.t.Fatalf("call %s: tool error %q", name, text(res))
	}
	return text(res)
}

var hostTools = []string{"caps__elicit", "caps__roots", "caps__sample"}

func hasAll(names []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(names, w) {
			return false
		}
	}
	return true
}

// A server lists tools by what the host declared (server-everything does).
// A catalog cached for a host that declared nothing is not served to one
// that declares sampling, elicitation and roots: that host's first
// tools/list is the live server's, with the three tools, and it can call
// them (docs/design.md §20; issue 33 item 4).
func TestCachedCatalogNotServedToAHostThatDeclaredOtherwise(t *testing.T) {
	dir := t.TempDir()
	first := startCacheRun(t, dir, false)
	names := first.waitTools("the live list", func(n []string) bool { return slices.Contains(n, "caps__echo") })
	if slices.ContainsFunc(hostTools, func(n string) bool { return slices.Contains(names, n) }) {
		t.Fatalf("a host declaring nothing was listed %v", names)
	}
	first.stop()

	second := startCacheRun(t, dir, true)
	if names := second.tools(); !hasAll(names, hostTools...) {
		t.Fatalf("first tools/list of a host declaring sampling, elicitation and roots: %v (the catalog cached for a host that declared nothing)", names)
	}
	if got := second.call("caps__roots", nil); got != "file:///host" {
		t.Fatalf("caps__roots: %q", got)
	}
	if got := second.call("caps__sample", map[string]any{"prompt": "hi"}); got != "sampled" {
		t.Fatalf("caps__sample: %q", got)
	}
	second.stop()

	// Each declaration keeps its own entry: the first host's is still there.
	entries, _ := filepath.Glob(filepath.Join(dir, "caps.*.json"))
	if len(entries) != 2 {
		t.Fatalf("cache entries %v, want one per declaration", entries)
	}
}

// A stale cached catalog (the server's list changed since) is replaced by
// the live one in what the host sees and in what it can call, and the
// host is told with list_changed.
func TestStaleCachedCatalogReplacedByTheLiveOne(t *testing.T) {
	dir := t.TempDir()
	first := startCacheRun(t, dir, true)
	first.waitTools("the live list", func(n []string) bool { return hasAll(n, hostTools...) })
	first.stop()

	// Make the entry stale: the server "had" no roots tool when it was
	// written.
	entries, _ := filepath.Glob(filepath.Join(dir, "caps.*.json"))
	if len(entries) != 1 {
		t.Fatalf("cache entries %v", entries)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	e["tools"] = slices.DeleteFunc(e["tools"].([]any), func(v any) bool { return v.(map[string]any)["name"] == "roots" })
	if err := os.WriteFile(entries[0], mustJSON(e), 0o600); err != nil {
		t.Fatal(err)
	}

	// The pool's clock stands still: the cached server's start is held
	// until the host's first tools/list, never by the 1 s bound's expiry
	// on a loaded machine, so that list is the cache's.
	second := startCacheRunWith(t, dir, true, func(o *Options) { o.Pool.Clock = clock.NewMock() })
	if names := second.tools(); slices.Contains(names, "caps__roots") || !slices.Contains(names, "caps__echo") {
		t.Fatalf("first list %v, want the stale cached one", names)
	}
	second.waitTools("the live list replacing the cached one", func(n []string) bool { return hasAll(n, hostTools...) })
	if got := second.call("caps__roots", nil); !strings.Contains(got, "file:///host") {
		t.Fatalf("caps__roots: %q", got)
	}
}
