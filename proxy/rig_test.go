package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The in-process rig: a Server over in-memory servers (transport.Memory,
// one per configured name, each generation a real go-sdk server with the
// features below), and go-sdk hosts over in-memory transports (Serve) or
// Streamable HTTP (Handler). No process, no port but httptest's.

var objectSchema = map[string]any{"type": "object"}

// rig is one Server and its servers.
type rig struct {
	t    *testing.T
	srv  *Server
	mems map[string]*transport.Memory
	h    http.Handler // serveHTTP's
	// downstream pins the servers' protocol version, as the proxy does
	// with real transports (downstreamVersion); "" lets them negotiate.
	downstream string
	// stdio makes host connect over pipes, served by transport.HostStdio
	// as a stdio host is (its reader diverts fast calls: fast.go).
	stdio bool
}

// pinned is a Memory whose sessions ask for one protocol version.
type pinned struct {
	*transport.Memory
	version string
}

func (p pinned) SessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: p.version}
}

// newRig serves the named in-memory servers. Each offers echo and hang
// (transport.Memory), and the features of serveFeatures.
func newRig(t *testing.T, opts Options, names ...string) *rig {
	t.Helper()
	return newRigWith(t, opts, nil, names...)
}

// newRigWith is newRig with more configuration keys for some servers.
func newRigWith(t *testing.T, opts Options, extra map[string]map[string]any, names ...string) *rig {
	t.Helper()
	r := &rig{t: t, mems: map[string]*transport.Memory{}}
	servers := map[string]any{}
	for _, name := range names {
		m := transport.NewMemory("echo", "hang")
		m.Serve = func(gen uint64, s *mcp.Server) { serveFeatures(name, gen, s) }
		m.ServerOptions = func(gen uint64) *mcp.ServerOptions { return featureOptions(name) }
		r.mems[name] = m
		sc := map[string]any{"command": "mem-" + name}
		for k, v := range extra[name] {
			sc[k] = v
		}
		servers[name] = sc
	}
	cfg := mustConfig(t, map[string]any{"mcpServers": servers,
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 50, "maxAttempts": 3}})
	opts.Pool.Opener = func(sc config.Server) (transport.Opener, error) {
		m, ok := r.mems[sc.Name]
		if !ok {
			return nil, fmt.Errorf("no memory server %q", sc.Name)
		}
		if r.downstream != "" {
			return pinned{m, r.downstream}, nil
		}
		return m, nil
	}
	r.srv = New(cfg, opts)
	shutdownAtCleanup(t, r.srv, "Shutdown")
	return r
}

// shutdownAtCleanup shuts srv down when the test ends, and fails the test
// if that does not end in order within testDeadline; what names srv in
// the failure.
func shutdownAtCleanup(t *testing.T, srv *Server, what string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

func mustConfig(t *testing.T, v map[string]any) *config.Config {
	t.Helper()
	cfg, _, err := config.Parse(mustJSON(v), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// host connects a go-sdk host on era over in-memory transports (the stdio
// shape: one Serve per host).
func (r *rig) host(era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	var st, ct mcp.Transport = mcp.NewInMemoryTransports()
	if r.stdio {
		hr, cw := io.Pipe() // host → proxy
		cr, hw := io.Pipe() // proxy → host
		st, ct = &transport.HostStdio{Reader: hr, Writer: hw}, &mcp.IOTransport{Reader: cr, Writer: cw}
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, opts).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		cancel()
		r.t.Fatalf("host connect: %v", err)
	}
	r.t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
	})
	return cs
}

// httpHost connects a go-sdk host on era over Streamable HTTP.
func (r *rig) httpHost(url, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		r.t.Fatalf("http host connect: %v", err)
	}
	r.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// handler is the rig's Server's HTTP handler, once its first apply ended.
func (r *rig) handler() http.Handler {
	r.t.Helper()
	h, err := r.srv.Handler(HTTPOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.waitApplied()
	return h
}

// serveHTTP serves the rig's Server on an httptest server.
func (r *rig) serveHTTP() *httptest.Server {
	r.t.Helper()
	if r.downstream == "" {
		r.downstream = legacyVersion // as Start's downstreamVersion
	}
	h, err := r.srv.Handler(HTTPOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.h = h
	hs := httptest.NewServer(h)
	r.t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs
}

// waitApplied waits for the servers' first start.
func (r *rig) waitApplied() {
	r.t.Helper()
	select {
	case <-r.srv.Applied():
	case <-time.After(testDeadline):
		r.t.Fatal("the servers never started")
	}
}

// features records what the in-memory servers saw.
var features = struct {
	sync.Mutex
	level map[string]mcp.LoggingLevel // the last level each server was set to
}{level: map[string]mcp.LoggingLevel{}}

// subscribeHook, when set, answers the servers' subscribes.
var subscribeHook atomic.Pointer[func(uri string) error]

// lastLevel is the last level server name was set to.
func lastLevel(name string) mcp.LoggingLevel {
	features.Lock()
	defer features.Unlock()
	return features.level[name]
}

func featureOptions(name string) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{name + ":" + req.Params.Argument.Value}}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if fn := subscribeHook.Load(); fn != nil {
				return (*fn)(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
}

// serveFeatures adds a prompt, a resource, a template and the tools sample
// (asks the host), sleep (runs for its "ms" on the clock) and flood (sends
// "n" log messages of 4 KiB) to one generation's server.
func serveFeatures(name string, gen uint64, s *mcp.Server) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
				features.Lock()
				features.level[name] = p.Level
				features.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from " + name}}}}, nil
	})
	uri := "mem://" + name + "/doc"
	s.AddResource(&mcp.Resource{URI: uri, Name: "doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "doc of " + name}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://" + name + "/items/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name + " item " + req.Params.URI}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		params := &mcp.CreateMessageParams{MaxTokens: 9, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: name + " asks"}}}}
		if ip := req.Session.InitializeParams(); ip != nil && ip.ProtocolVersion >= "2026-07-28" {
			r, ok := req.Params.InputResponses["q"]
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": params}}, nil
			}
			if res, ok := r.(*mcp.CreateMessageWithToolsResult); ok && len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					return textResult("sampled: " + tc.Text), nil
				}
			}
			return textResult(fmt.Sprintf("sampled: %T", r)), nil
		}
		res, err := req.Session.CreateMessage(ctx, params)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		// {"hang": true}: after the answer, work until cancelled (a task's
		// rounds, tasks_rounds_test.go).
		var in struct {
			Hang bool `json:"hang"`
		}
		if _ = json.Unmarshal(req.Params.Arguments, &in); in.Hang {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return textResult("sampled: ?"), nil
		}
		return textResult("sampled: " + tc.Text), nil
	})
	type sleepIn struct {
		Ms int64 `json:"ms"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return textResult(fmt.Sprintf("slept %dms", in.Ms)), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	// rpcerr answers with the JSON-RPC error of the code asked for (a
	// server refusing a request: the HTTP front maps some codes to a
	// status, docs/design.md §24).
	s.AddTool(&mcp.Tool{Name: "rpcerr", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Code int64 `json:"code"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return nil, &jsonrpc.Error{Code: in.Code, Message: fmt.Sprintf("refused with %d", in.Code)}
	})
	type floodIn struct {
		N int `json:"n"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(ctx context.Context, req *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
		data := strings.Repeat("x", 4096)
		for i := range in.N {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("%d %s", i, data)})
		}
		return textResult("flooded"), nil, nil
	})
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// call calls a tool and returns its text, failing the test on a protocol
// error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	return callWithin(t, cs, name, args, testDeadline)
}

func callWithin(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, d time.Duration) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text(res), res.IsError
}

var _ = mcpkeep.ErrNotConnected
