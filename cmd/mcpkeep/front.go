package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// front is the MCP server the host talks to, for `proxy` and `run`. It
// advertises everything from the start (tools, prompts, resources with
// subscribe, logging, completions, each list with listChanged: servers come
// and go), learns the host's capabilities at its initialize (or first
// request, on 2026-07-28) and only then starts the servers, so each server
// is told exactly the sampling, elicitation and roots capabilities the
// host declared. The host's initialize is answered once the servers'
// first connections settled, or after initWait, whichever comes first.
type front struct {
	srv     *mcp.Server
	host    *hostLink
	up      *upstream
	cat     *catalogMirror
	set     *tools.Set
	catalog *tools.Catalog
	log     *slog.Logger

	poolOpts mcpkeep.PoolOptions
	// apply starts the servers (Pool.Apply of the config).
	apply    func(ctx context.Context, pool *mcpkeep.Pool) error
	initWait time.Duration
	// patch, when set, edits the answer to the host's initialize or
	// discover once the servers settled (run mirrors its server there).
	patch func(pool *mcpkeep.Pool, res mcp.Result)

	once    sync.Once
	started chan struct{} // closed when the pool exists (after the host's first request)
	applied chan struct{} // closed when the first apply returned

	mu       sync.Mutex
	pool     *mcpkeep.Pool
	applyErr error
	ctx      context.Context // ends the first apply (Dispose cancels it too)
	ops      *ops            // counts relayed requests; nil in tests
	// levels and subs are per host session; the servers get the most
	// verbose level any session asked for and the union of subscriptions.
	levels map[*mcp.ServerSession]mcp.LoggingLevel
	subs   map[string]map[*mcp.ServerSession]bool
}

func newFront(log, sdkLog *slog.Logger, impl *mcp.Implementation, poolOpts mcpkeep.PoolOptions,
	apply func(context.Context, *mcpkeep.Pool) error, initWait time.Duration) *front {
	f := &front{log: log, poolOpts: poolOpts, apply: apply, initWait: initWait,
		started: make(chan struct{}), applied: make(chan struct{}),
		levels: map[*mcp.ServerSession]mcp.LoggingLevel{}, subs: map[string]map[*mcp.ServerSession]bool{},
		set: tools.NewSet(tools.Limits{}), catalog: tools.NewCatalog(tools.Limits{}), ctx: context.Background()}
	f.srv = mcp.NewServer(impl, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:       f.complete,
		SubscribeHandler:        f.subscribe,
		UnsubscribeHandler:      f.unsubscribe,
		InitializedHandler:      f.initialized,
		RootsListChangedHandler: f.rootsChanged,
		Logger:                  sdkLog,
	})
	f.host = &hostLink{log: log, srv: f.srv}
	f.up = newUpstream(f.srv, f.getPool, f.host, log)
	f.cat = newCatalogMirror(f.srv, f.getPool, log)
	f.srv.AddReceivingMiddleware(f.middleware)
	return f
}

func (f *front) getPool() *mcpkeep.Pool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pool
}

// Pool returns the pool once the host's first request created it.
func (f *front) Pool() (*mcpkeep.Pool, bool) {
	select {
	case <-f.started:
		return f.getPool(), true
	default:
		return nil, false
	}
}

// middleware starts the servers at the host's first request and edits the
// answers to initialize and discover; logging/setLevel goes to every
// server too (and is remembered for those that start later).
func (f *front) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		f.start(method, req)
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				f.setLevel(ctx, req.GetSession().(*mcp.ServerSession), p.Level)
			}
		}
		res, err := next(ctx, method, req)
		if err != nil || (method != "initialize" && method != "server/discover") {
			return res, err
		}
		f.settle()
		pool := f.getPool()
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = joinInstructions(r.Instructions, instructions(pool))
		case *mcp.DiscoverResult:
			r.Instructions = joinInstructions(r.Instructions, instructions(pool))
		}
		if f.patch != nil {
			f.patch(pool, res)
		}
		return res, nil
	}
}

func joinInstructions(own, servers string) string {
	if own == "" {
		return servers
	}
	if servers == "" {
		return own
	}
	return own + "\n\n" + servers
}

// start runs once, at the host's first request: it learns the host's
// capabilities, builds the pool with exactly the matching host handlers,
// and starts the servers in the background.
func (f *front) start(method string, req mcp.Request) {
	f.once.Do(func() {
		var caps *mcp.ClientCapabilities
		version := ""
		if p, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" && p != nil {
			caps, version = p.Capabilities, p.ProtocolVersion
		} else if r, ok := req.(interface {
			ClientCapabilities() *mcp.ClientCapabilities
			ProtocolVersion() string
		}); ok {
			caps, version = r.ClientCapabilities(), r.ProtocolVersion()
		}
		f.launch(caps, version)
	})
}

// startServing starts the servers before any host connected (--listen:
// many hosts, so every capability a host may have is declared and each
// server request is carried to the session that can answer it).
func (f *front) startServing() {
	f.once.Do(func() {
		f.launch(&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{ListChanged: true}}, "")
	})
}

func (f *front) launch(caps *mcp.ClientCapabilities, version string) {
	f.host.learn(caps, version)
	opts := f.poolOpts
	opts.Sink, opts.Catalog = f.set, f.catalog
	opts.Host = f.host.handlers(&logRelay{srv: f.srv, host: f.host})
	if opts.Host.ListRoots != nil {
		opts.Roots = []*mcp.Root{} // the servers know of roots from the start
	}
	pool := mcpkeep.NewPool(opts)
	f.set.Subscribe(f.up.apply)
	f.catalog.Subscribe(f.cat.apply)
	f.mu.Lock()
	f.pool = pool
	ctx := f.ctx
	f.mu.Unlock()
	f.log.Info("host connected", slog.String("protocol", version), slog.Any("sampling", caps != nil && caps.Sampling != nil),
		slog.Any("elicitation", caps != nil && caps.Elicitation != nil), slog.Any("roots", opts.Host.ListRoots != nil))
	close(f.started)
	go func() {
		err := f.apply(ctx, pool)
		f.mu.Lock()
		f.applyErr = err
		f.mu.Unlock()
		close(f.applied)
	}()
}

// settle waits for the first apply, at most initWait. The lists it
// registered were announced by the SDK 10 ms (debounced) after the last
// change; waiting that out before the host has its answer keeps the host
// from hearing of lists it is about to read anyway.
func (f *front) settle() {
	t := time.NewTimer(f.initWait)
	defer t.Stop()
	select {
	case <-f.applied:
		time.Sleep(sdkListChangedDelay)
	case <-t.C:
	}
}

// sdkListChangedDelay outlasts the SDK's debounce of list_changed (10 ms).
const sdkListChangedDelay = 25 * time.Millisecond

// initialized fetches a (legacy) host's roots once it finished
// initializing; a 2026-07-28 host is asked for roots through bridges.
func (f *front) initialized(ctx context.Context, req *mcp.InitializedRequest) {
	f.refreshRoots(req.Session)
}

func (f *front) rootsChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	f.refreshRoots(req.Session)
}

func (f *front) refreshRoots(ss *mcp.ServerSession) {
	if ss == nil || isModern(ss) {
		return
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || (p.Capabilities.RootsV2 == nil && !p.Capabilities.Roots.ListChanged) {
		return
	}
	go func() { // never call the host from its own notification handler
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
		if err != nil {
			f.log.Warn("roots/list failed", slog.Any("err", err))
			return
		}
		<-f.started
		_ = f.getPool().SetRoots(ctx, res.Roots)
	}()
}

func (f *front) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	start := time.Now()
	res, err := f.getPool().Complete(ctx, req.Params, nil)
	f.ops.observeRequest("", "completion/complete", start, err)
	if err != nil {
		return nil, f.cat.wireError(err)
	}
	return res, nil
}

func (f *front) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	f.mu.Lock()
	first := len(f.subs[req.Params.URI]) == 0
	if first {
		f.subs[req.Params.URI] = map[*mcp.ServerSession]bool{}
	}
	f.subs[req.Params.URI][req.Session] = true
	f.mu.Unlock()
	if !first {
		return nil // the servers already have it; the SDK tracks who asked
	}
	if err := f.getPool().SubscribeResource(ctx, req.Params.URI); err != nil {
		f.mu.Lock()
		delete(f.subs, req.Params.URI)
		f.mu.Unlock()
		if errors.Is(err, mcpkeep.ErrUnknownResource) {
			return mcp.ResourceNotFoundError(req.Params.URI)
		}
		return f.cat.wireError(err)
	}
	return nil
}

// unsubscribe ends the servers' subscription when the last host session
// that asked for it leaves it.
func (f *front) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	f.mu.Lock()
	delete(f.subs[req.Params.URI], req.Session)
	last := len(f.subs[req.Params.URI]) == 0
	if last {
		delete(f.subs, req.Params.URI)
	}
	f.mu.Unlock()
	if !last {
		return nil
	}
	return f.getPool().UnsubscribeResource(ctx, req.Params.URI)
}

// setLevel records a session's level and gives the servers the most
// verbose one any session asked for (each session's own level still
// filters what it receives).
func (f *front) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	f.mu.Lock()
	f.levels[ss] = level
	most := level
	for _, l := range f.levels {
		if levelRank(l) < levelRank(most) { // the most verbose
			most = l
		}
	}
	f.mu.Unlock()
	_ = f.getPool().SetLoggingLevel(ctx, most)
}

// levelRank orders levels by verbosity (an unknown one last).
func levelRank(l mcp.LoggingLevel) int {
	if i := slices.Index(mcpkeep.LoggingLevels, l); i >= 0 {
		return i
	}
	return len(mcpkeep.LoggingLevels)
}
