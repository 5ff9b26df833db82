package proxy

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front is the MCP server the hosts talk to. It advertises everything
// from the start (tools, prompts, resources with subscribe, logging,
// completions, each list with listChanged: servers come and go), learns
// the host's capabilities at its initialize (or first request, on
// 2026-07-28) and only then starts the servers, so each server is told
// exactly the sampling, elicitation and roots capabilities the host
// declared. The host's initialize is answered once the servers' first
// connections settled, or after InitWait, whichever comes first.

// middleware starts the servers at the host's first request and edits the
// answers to initialize and discover; logging/setLevel goes to every
// server too (and is remembered for those that start later).
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		s.startFor(method, req)
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				s.setLevel(ctx, req.GetSession().(*mcp.ServerSession), p.Level)
			}
		}
		ctx, endTrace := s.traceRequest(ctx, method, req) // docs/design.md §27
		res, err := next(ctx, method, req)
		endTrace(res, err)
		if method == "tools/list" {
			s.noteListed(res, err)
		}
		if err != nil || (method != "initialize" && method != "server/discover") {
			return res, err
		}
		s.settle(ctx)
		pool := s.getPool()
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = joinInstructions(r.Instructions, instructions(pool))
		case *mcp.DiscoverResult:
			r.Instructions = joinInstructions(r.Instructions, instructions(pool))
		}
		if s.opts.Mirror != "" {
			mirror(pool, s.opts.Mirror, res)
		}
		return res, nil
	}
}

// noteListed releases the cached servers' staggered start (launch) once a
// host has its first complete tools/list: the answer without a next
// cursor, or an error (a host that gets one will not page on). Released
// after the first of several pages, the spawns took the cores from the
// marshalling of the rest (docs/design.md §20); a host that never asks
// for the next page is bounded by mcpkeep.StartHoldMax.
func (s *Server) noteListed(res mcp.Result, err error) {
	if r, ok := res.(*mcp.ListToolsResult); ok && err == nil && r.NextCursor != "" {
		return
	}
	s.listedOnce.Do(func() { close(s.listed) })
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

// startFor runs once, at the host's first request: it learns the host's
// capabilities, builds the pool with exactly the matching host handlers,
// and starts the servers in the background.
func (s *Server) startFor(method string, req mcp.Request) {
	s.once.Do(func() {
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
		s.launch(caps, version, s.listed)
	})
}

// launch builds the pool and starts the servers. hold, when set, holds
// the staggered start of the cached ones until the host has its first
// tools/list (PoolOptions.HoldStarts): one stdio host waits for it.
func (s *Server) launch(caps *mcp.ClientCapabilities, version string, hold <-chan struct{}) {
	s.host.learn(caps, version)
	opts := s.opts.Pool
	opts.HoldStarts = hold
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	catalog := tools.NewCatalog(tools.Limits{})
	opts.Sink, opts.Catalog = s.set, catalog
	opts.Observer = mcpkeep.Observers(s.health.Observer(), opts.Observer)
	opts.Host = s.host.handlers(&logRelay{srv: s.srv, host: s.host})
	if opts.Host.ListRoots != nil {
		opts.Roots = []*mcp.Root{} // the servers know of roots from the start
	}
	s.mu.Lock()
	s.twins.start(opts, version, s.mu.cfg) // docs/design.md §24
	s.mu.Unlock()
	if opts.Opener == nil {
		opts.Opener = downstreamOpener(version, opts.Logger)
	}
	pool := mcpkeep.NewPool(opts)
	s.set.Subscribe(s.mirrors.tools(s.up.apply))
	catalog.Subscribe(s.mirrors.catalog(s.cat.apply))
	s.mu.Lock()
	s.mu.pool, s.mu.catalog = pool, catalog
	s.mu.Unlock()
	s.log.Info("host connected", slog.String("protocol", version), slog.Any("sampling", caps != nil && caps.Sampling != nil),
		slog.Any("elicitation", caps != nil && caps.Elicitation != nil), slog.Any("roots", opts.Host.ListRoots != nil))
	close(s.started)
	go func() {
		s.reloadMu.Lock()
		s.mu.Lock()
		cfg := s.mu.cfg
		s.mu.Unlock()
		err := pool.Apply(s.ctx, cfg)
		s.reloadMu.Unlock()
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				s.log.Error("startup", slog.String("err", line))
			}
		}
		s.mu.Lock()
		s.mu.applyErr = err
		s.mu.Unlock()
		close(s.applied)
		if err := s.StartupError(); err != nil {
			s.log.Error("strict startup failed", slog.Any("err", err))
			return
		}
		s.log.Info("serving", slog.Int("servers", len(cfg.Servers)), slog.Int("tools", len(s.set.List())))
	}()
}

// settle waits for the first apply, at most InitWait. The lists it
// registered were announced by the SDK 10 ms (debounced) after the last
// change; waiting that out before the host has its answer keeps the host
// from hearing of lists it is about to read anyway. A session Serve
// connected after the last change has nothing announced to it
// (front_early.go): it is answered at once.
func (s *Server) settle(ctx context.Context) {
	mark, marked := markOf(ctx)
	deadline := mark.deadline
	if deadline.IsZero() {
		deadline = s.initDeadline()
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-s.applied:
		// The SDK announces a change of the lists sdkNotificationDelay
		// after the last one; the announcement goes out first.
		stamp := s.up.changed.Load()
		if marked && stamp == mark.stamp {
			return
		}
		last := time.Unix(0, stamp)
		wait := time.NewTimer(time.Until(last.Add(sdkNotificationDelay + sdkNotificationSlack)))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
		}
	case <-t.C:
	case <-ctx.Done(): // the session's end
	}
}

// sdkNotificationDelay is the SDK's debounce of list_changed
// (notificationDelay in go-sdk v1.8.0); sdkNotificationSlack is the
// margin for its timer and its write.
const (
	sdkNotificationDelay = 10 * time.Millisecond
	sdkNotificationSlack = 5 * time.Millisecond
)

// initialized fetches a (legacy) host's roots once it finished
// initializing; a 2026-07-28 host is asked for roots through bridges.
func (s *Server) initialized(ctx context.Context, req *mcp.InitializedRequest) {
	s.refreshRoots(req.Session)
}

func (s *Server) rootsChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	s.refreshRoots(req.Session)
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ctx, done := s.track(ctx)
	defer done()
	start := time.Now()
	res, err := s.getPool().Complete(ctx, req.Params, nil)
	s.observeRequest("", "completion/complete", start, err)
	if err != nil {
		return nil, s.cat.wireError(err)
	}
	return res, nil
}

// levelRank orders levels by verbosity (an unknown one last).
func levelRank(l mcp.LoggingLevel) int {
	if i := slices.Index(mcpkeep.LoggingLevels, l); i >= 0 {
		return i
	}
	return len(mcpkeep.LoggingLevels)
}

// downstreamVersion is the protocol version the servers are asked for:
// the host's own, so a server sees the era it would see directly
// (docs/design.md §14). With many hosts (Start: no host yet, hosts of
// both eras) it is the legacy one: a classic server's requests during a
// call then reach a legacy host as they are and a 2026-07-28 host through
// its bridge, while a 2026-07-28 session could carry none of them.
func downstreamVersion(hostVersion string) string {
	if hostVersion == "" {
		return legacyVersion
	}
	return hostVersion
}

// legacyVersion is the last protocol version of the stateful era.
const legacyVersion = "2025-11-25"

// downstreamOpener builds each server's transport from its config and
// pins the protocol version its sessions ask for, given the host's
// version ("" with many hosts: Start).
func downstreamOpener(hostVersion string, log *slog.Logger) func(config.Server) (transport.Opener, error) {
	return func(s config.Server) (transport.Opener, error) {
		o, err := s.Opener(log)
		switch t := o.(type) {
		case *transport.Stdio:
			t.ProtocolVersion = downstreamVersion(hostVersion)
		case *transport.HTTP:
			// A stateful HTTP server may not speak 2026-07-28: the SDK
			// negotiates down from it on its own, never up from legacy.
			// With many hosts the SDK negotiates: a stateless server
			// (which makes no request of a legacy session, so a legacy
			// one could ask no host for anything) speaks 2026-07-28 and
			// asks by input requests; a stateful one is legacy anyway
			// (docs/design.md §24).
			if hostVersion != "" && hostVersion < modernVersion {
				t.ProtocolVersion = hostVersion
			}
		}
		return o, err
	}
}
