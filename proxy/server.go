package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server serves the union of a pool's servers to MCP hosts: over one
// transport (Serve, stdio) or over Streamable HTTP to many host sessions
// (Handler). See the package documentation.
type Server struct {
	opts   Options
	log    *slog.Logger
	srv    *mcp.Server
	host   *hostLink
	up     *upstream
	cat    *catalogMirror
	set    *tools.Set
	health *Health

	// ctx ends the first apply and every call in flight (Shutdown).
	ctx    context.Context
	cancel context.CancelFunc
	calls  inflight // host requests relayed to the pool

	once    sync.Once
	started chan struct{} // closed when the pool exists
	// listed is closed when a host's first tools/list was answered: the
	// cached servers' staggered start waits for it (launch).
	listed     chan struct{}
	listedOnce sync.Once
	applied    chan struct{} // closed when the first Apply returned
	// mirrors knows what the mirrors delivered (front_mirrors.go).
	mirrors *mirrorWatch

	reloadMu sync.Mutex // one Apply at a time

	mu struct {
		sync.Mutex
		cfg      *config.Config
		pool     *mcpkeep.Pool
		catalog  *tools.Catalog // the pool's, once it exists
		applyErr error
		// levels and subs are per host session; the servers get the most
		// verbose level any session asked for and the union of
		// subscriptions.
		levels map[*mcp.ServerSession]mcp.LoggingLevel
		subs   map[string]*subscription
		// subscribed is each URI's subscribed sessions, as the
		// subscriptions have them (sessions.go: member).
		subscribed map[string]map[*mcp.ServerSession]bool
		// sessions are the host sessions seen (see watch), roots their
		// roots refreshes.
		sessions map[*mcp.ServerSession]bool
		roots    map[*mcp.ServerSession]*rootsState
		// closing: Shutdown waits for the session goroutines; no more
		// start (goLocked).
		closing bool
	}
	sessionsWG sync.WaitGroup // watch and roots goroutines

	// fast counts the fast path's calls (fast.go): served, and handed
	// back to the SDK's server.
	fast struct{ served, handedBack atomic.Uint64 }
	// hostMetas are the 2026-07-28 hosts' _meta fields the HTTP fast
	// path decoded (httpfast.go).
	hostMetas hostMetas

	twins twins      // 2026-07-28 hosts' twin processes (twin.go, docs/design.md §24)
	tasks *taskFront // the tasks extension (tasks.go, docs/design.md §25)
}

// New returns a Server for cfg's servers. Nothing starts until a host's
// first request reaches Serve's transport, or Start (which Handler
// calls).
func New(cfg *config.Config, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sdkLog := opts.SDKLogger
	if sdkLog == nil {
		sdkLog = slog.New(slog.DiscardHandler)
	}
	impl := opts.Implementation
	if impl == nil {
		impl = &mcp.Implementation{Name: "mcpkeep", Version: "devel"}
	}
	s := &Server{opts: opts, log: log, health: NewHealth(),
		started: make(chan struct{}), applied: make(chan struct{}), listed: make(chan struct{}),
		set: tools.NewSet(tools.Limits{}), mirrors: newMirrorWatch()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.cfg = cfg
	s.mu.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	s.mu.subs = map[string]*subscription{}
	s.mu.subscribed = map[string]map[*mcp.ServerSession]bool{}
	s.mu.sessions = map[*mcp.ServerSession]bool{}
	s.mu.roots = map[*mcp.ServerSession]*rootsState{}
	s.health.Expect(serverNames(cfg))
	s.srv = mcp.NewServer(impl, &mcp.ServerOptions{
		Capabilities: withTasksExtension(&mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		}),
		CompletionHandler:       s.complete,
		SubscribeHandler:        s.subscribe,
		UnsubscribeHandler:      s.unsubscribe,
		InitializedHandler:      s.initialized,
		RootsListChangedHandler: s.rootsChanged,
		GetSessionID:            opts.Replicas.sessionIDs(), // replicas.go
		Logger:                  sdkLog,
	})
	s.host = &hostLink{log: log, srv: s.srv}
	s.host.updates.srv = s.srv
	s.host.bridges.base = s.ctx
	s.host.bridges.seal = newStateSealer(opts.StateKey)
	opts.Replicas.own(s.host.bridges.seal) // replicas.go
	rp := newRelayPath(s.srv, s.getPool, s.host, log)
	rp.observe, rp.track = s.observeRequest, s.track
	s.up, s.cat = newUpstream(rp), newCatalogMirror(rp)
	s.twins.log, s.twins.base, s.twins.turn, s.up.twins = log, s.ctx, make(chan struct{}, 1), &s.twins
	s.health.twins = s.twins.states
	s.srv.AddReceivingMiddleware(s.middleware)
	s.setupTasks()
	return s
}

// Serve serves one host on t (stdio: &transport.HostStdio{...}) until the
// host goes away or ctx ends. The servers start at the host's first
// request, with its capabilities (docs/design.md §14). Its tools/calls
// take the fast path (docs/design.md §24). An *mcp.IOTransport is served
// as the transport.HostStdio of its reader and writer, which reads and
// writes as it does (and, unlike it behind the fast path's wrapper, still
// learns the session's protocol version for its batches).
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	if io, ok := t.(*mcp.IOTransport); ok {
		t = &transport.HostStdio{Reader: io.Reader, Writer: io.Writer, MaxLineLength: io.MaxLineLength}
	}
	ft := &fastTransport{Transport: t, s: s}
	if _, err := ft.Connect(ctx); err != nil {
		return err
	}
	fc := ft.conn
	abandon := func() { // before the SDK's session took the connection
		fc.stop()
		_ = fc.Close()
		fc.wg.Wait()
	}
	// The host's first message is read before its session exists, and
	// read again by the SDK's (front_early.go, docs/design.md §20).
	// Shutdown ends the wait as it ends a session.
	rctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	first, err := fc.Read(rctx)
	stop()
	cancel()
	if err != nil {
		abandon()
		if errors.Is(err, io.EOF) {
			return nil // as the session's Wait has it
		}
		return err
	}
	fc.handBack(first)
	deadline, _ := s.startEarly(ctx, first)
	if err := cmp.Or(ctx.Err(), s.ctx.Err()); err != nil {
		abandon()
		return err
	}
	ss, err := s.srv.Connect(s.markSession(ctx, deadline), connected{fc}, nil)
	if err != nil {
		return err
	}
	fc.session.Store(ss)
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		err = ctx.Err()
	case err = <-ended:
	}
	fc.stop()
	fc.wg.Wait() // the fast calls end with the connection
	return err
}

// Start starts the servers now, before any host connected, declaring
// every host capability (sampling, elicitation, roots): many hosts may
// come, and each server request is carried to the session that can
// answer it. Handler calls it.
func (s *Server) Start() {
	s.once.Do(func() {
		s.launch(&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{ListChanged: true}}, "", nil)
	})
}

// Pool returns the pool once the servers started.
func (s *Server) Pool() (*mcpkeep.Pool, bool) {
	select {
	case <-s.started:
		return s.getPool(), true
	default:
		return nil, false
	}
}

// Started is closed when the servers started (the pool exists).
func (s *Server) Started() <-chan struct{} { return s.started }

// Applied is closed when the servers' first start returned: every
// server's first attempt settled.
func (s *Server) Applied() <-chan struct{} { return s.applied }

// StartupError, once Applied is closed, reports the servers with
// failOnStartupError that did not start (wrapping ErrStrictStartup), or
// nil. Other servers' failures are logged and retried.
func (s *Server) StartupError() error {
	s.mu.Lock()
	cfg, pool := s.mu.cfg, s.mu.pool
	s.mu.Unlock()
	if pool == nil {
		return nil
	}
	var missing []string
	for _, sc := range cfg.Servers {
		if _, ok := pool.Supervisor(sc.Name); sc.FailOnStartupError && !ok {
			missing = append(missing, sc.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrStrictStartup, strings.Join(missing, ", "))
}

// Health is the proxy's readiness and liveness (see Health).
func (s *Server) Health() *Health { return s.health }

// Tools lists the public tools the host sees.
func (s *Server) Tools() []tools.Tool { return s.set.List() }

// Reload applies cfg by difference (unchanged servers keep running) and
// gives every server that gave up a fresh budget: a reload is also a
// manual reconnect. Before the servers started it only replaces the
// config they will start with.
func (s *Server) Reload(ctx context.Context, cfg *config.Config) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.mu.Lock()
	s.mu.cfg = cfg
	pool := s.mu.pool
	s.mu.Unlock()
	s.health.Expect(serverNames(cfg))
	if pool == nil {
		return nil
	}
	err := pool.Apply(ctx, cfg)
	for _, st := range pool.States() {
		if st.State != fsm.Exhausted {
			continue
		}
		if sup, ok := pool.Supervisor(st.Server); ok {
			if sup.Reconnect() == nil {
				s.log.Info("manual reconnect", slog.String("server", st.Server))
			}
		}
	}
	s.twins.reload(ctx, cfg)
	s.log.Info("reloaded", slog.Int("servers", len(cfg.Servers)))
	return err
}

func (s *Server) observeRequest(server, method string, start time.Time, err error) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.Request(server, method, time.Since(start), err)
	}
}

func (s *Server) getPool() *mcpkeep.Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.pool
}

// serverNames are the names of cfg's servers.
func serverNames(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		out = append(out, sc.Name)
	}
	return out
}

// HostDropped counts the log and progress messages dropped because a host
// session's outbox was full (a host that does not read).
func (s *Server) HostDropped() uint64 { return s.host.outboxes.dropped.Load() }

// HostAmbiguous counts the servers' requests to a host (sampling,
// elicitation, roots) refused because calls of several host sessions could
// have caused them (docs/design.md §19).
func (s *Server) HostAmbiguous() uint64 { return s.host.ambiguous.Load() }
