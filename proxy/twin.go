package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Era twins (docs/design.md §24). With many hosts (Start) a stdio server
// is pinned to the legacy era: its SDK then turns a tool's input requests
// into plain server requests, and a 2026-07-28 host loses what only its
// era carries (the server's own input-request keys). So a 2026-07-28
// host's tool call of a stdio server goes to a twin: a second process of
// the same configuration, asked for 2026-07-28, started by the first such
// call. A twin is a supervisor of its own (I1 holds per supervisor: each
// of the two has at most one process), named "<server>-2026-07-28", in a
// pool of its own that the host never lists: the host's catalog stays the
// primary's, and only tools/call is routed by era.
//
// No twin for an HTTP server (the SDK negotiates its era: a stateless
// server already speaks 2026-07-28), for "eras": "shared", with one host
// (Serve: the servers are asked for that host's own era), or for a server
// whose twin answered an older version (it does not speak 2026-07-28: the
// twin is stopped and its calls take the bridge of the legacy process).
type twins struct {
	log  *slog.Logger
	base context.Context // the Server's: its end stops starts

	// turn serializes the Apply of the twin pool (a turn: a request
	// waits for it with its own context; docs/design.md §19 lock order).
	turn chan struct{}
	mu   struct {
		sync.Mutex
		pool *mcpkeep.Pool  // nil: no twins (one host, or before launch)
		cfg  *config.Config // the servers' configuration, as reloaded
		used []string       // servers with a twin, in the order first called
		// legacy are the servers whose twin did not speak 2026-07-28 or
		// did not start: their calls take the bridge until a reload.
		legacy map[string]bool
	}
}

// twinSuffix names a twin after its server: "<server>-2026-07-28" in
// logs, metrics, the live page and status.
const twinSuffix = "-" + modernVersion

// twinName is the supervisor name of server's 2026-07-28 twin. A server
// name longer than 21 characters leaves no room for the suffix
// (tools.MaxServerNameLen): its twin cannot start, and its calls take the
// bridge.
func twinName(server string) string { return server + twinSuffix }

// errNoTwin: the server's transport cannot be asked for 2026-07-28.
var errNoTwin = errors.New("no twin")

// start builds the (empty) twin pool when the servers are asked for the
// legacy era while 2026-07-28 hosts may come (version "": many hosts).
// opts are the primary pool's, before it got its downstream opener; the
// twin pool shares its host handlers and observers, never its lists.
func (t *twins) start(opts mcpkeep.PoolOptions, version string, cfg *config.Config) {
	if version != "" {
		return // one host: its servers already speak its era
	}
	open := opts.Opener
	log := opts.Logger
	opts.Opener = func(sc config.Server) (transport.Opener, error) {
		var o transport.Opener
		var err error
		if open != nil {
			o, err = open(sc)
		} else {
			o, err = sc.Opener(log)
		}
		if err != nil {
			return nil, err
		}
		switch st := o.(type) {
		case *transport.Stdio:
			st.ProtocolVersion = modernVersion
			return st, nil
		case transport.SessionOptioner:
			// An opener that asks for its own version (a library user's,
			// the tests'): the twin's initialize says what it speaks.
			return o, nil
		}
		return nil, fmt.Errorf("mcpkeep: twin of %q: %w (a %T cannot be asked for %s)", sc.Name, errNoTwin, o, modernVersion)
	}
	// Its own registries: the host lists the primary's (one catalog).
	opts.Sink, opts.Catalog = tools.NewSet(tools.Limits{}), tools.NewCatalog(tools.Limits{})
	opts.Cache, opts.HoldStarts = nil, nil
	t.mu.Lock()
	t.mu.pool = mcpkeep.NewPool(opts)
	t.mu.cfg = cfg
	t.mu.legacy = map[string]bool{}
	t.mu.Unlock()
}

// route returns the twin supervisor that serves a 2026-07-28 host's call
// of server, starting it if this is the first such call, and how long
// the call may wait for it; ok is false when the call goes to the
// primary. A start waits for the twin's first attempt (bounded by the
// server's connect timeout) in the twins' turn, which a request waits
// for with its own context.
func (t *twins) route(ctx context.Context, server string) (sup *mcpkeep.Supervisor, wait time.Duration, ok bool) {
	if t == nil {
		return nil, 0, false
	}
	t.mu.Lock()
	pool := t.mu.pool
	sc, eligible := t.eligibleLocked(server)
	t.mu.Unlock()
	if pool == nil || !eligible {
		return nil, 0, false
	}
	name := twinName(server)
	// A twin the pool has but has not started yet is another call's
	// start in flight: wait for it in the turn.
	if sup, ok = pool.Supervisor(name); !ok || !sup.State().Started {
		if !t.take(ctx) {
			return nil, 0, false
		}
		if sup, ok = pool.Supervisor(name); !ok { // not started by a call before us
			t.mu.Lock()
			t.mu.used = append(t.mu.used, server)
			t.mu.Unlock()
			t.log.Info("twin starting", slog.String("server", server), slog.String("twin", name),
				slog.String("protocol", modernVersion))
			t.applyTaken()
			if sup, ok = pool.Supervisor(name); !ok {
				// Its start failed (logged): the bridge until a reload.
				t.mu.Lock()
				t.mu.legacy[server] = true
				t.mu.used = slices.DeleteFunc(t.mu.used, func(s string) bool { return s == server })
				t.mu.Unlock()
			}
		}
		t.release()
		if !ok {
			return nil, 0, false
		}
	}
	if info := sup.ServerInfo(); info != nil && info.ProtocolVersion < modernVersion {
		t.mu.Lock()
		t.mu.legacy[server] = true
		t.mu.used = slices.DeleteFunc(t.mu.used, func(s string) bool { return s == server })
		t.mu.Unlock()
		t.log.Info("twin stopped", slog.String("server", server), slog.String("protocol", info.ProtocolVersion),
			slog.String("reason", "the server does not speak "+modernVersion+": its calls take the bridge"))
		t.apply(ctx)
		return nil, 0, false
	}
	if sup.State().State == fsm.Exhausted {
		return nil, 0, false // gave up: the primary and its bridge serve meanwhile
	}
	// A call waits for its twin as long as for the server starting.
	wait = cmp.Or(sc.WaitForReady, sc.ConnectTimeout, config.DefaultConnectTimeout)
	return sup, wait, true
}

// take waits for the twins' turn (one Apply of the twin pool at a time)
// as long as ctx and the Server last.
func (t *twins) take(ctx context.Context) bool {
	select {
	case t.turn <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-t.base.Done():
	}
	return false
}

func (t *twins) release() { <-t.turn }

// eligibleLocked reports whether server gets a twin, and its config.
func (t *twins) eligibleLocked(server string) (config.Server, bool) {
	if t.mu.cfg == nil || t.mu.legacy[server] {
		return config.Server{}, false
	}
	for _, sc := range t.mu.cfg.Servers {
		if sc.Name == server {
			return sc, sc.Transport == config.TransportStdio && sc.TwinEras
		}
	}
	return config.Server{}, false
}

// apply makes the twin pool hold a twin of every used server, with the
// current configuration, in the twins' turn.
func (t *twins) apply(ctx context.Context) {
	if t.take(ctx) {
		defer t.release()
		t.applyTaken()
	}
}

// applyTaken is apply with the turn taken: each twin is its server's
// configuration renamed, never lazy, never cached, stopped when idle.
func (t *twins) applyTaken() {
	t.mu.Lock()
	pool := t.mu.pool
	cfg := &config.Config{}
	for _, name := range t.mu.used {
		if sc, ok := t.eligibleLocked(name); ok {
			sc.Name, sc.Lazy = twinName(sc.Name), false
			if sc.IdleStop == 0 {
				// It costs a process only while 2026-07-28 hosts call.
				sc.IdleStop = mcpkeep.DefaultIdleStop
			}
			cfg.Servers = append(cfg.Servers, sc)
		}
	}
	t.mu.Unlock()
	if pool == nil {
		return
	}
	if err := pool.Apply(t.base, cfg); err != nil && !errors.Is(err, mcpkeep.ErrDisposed) {
		t.log.Warn("twin start failed", slog.Any("err", err))
	}
}

// reload takes a new configuration: twins of servers removed, changed to
// "eras": "shared" or to HTTP go; changed ones restart; a server found
// legacy is tried again (its command may have changed).
func (t *twins) reload(ctx context.Context, cfg *config.Config) {
	t.mu.Lock()
	t.mu.cfg = cfg
	clear(t.mu.legacy)
	t.mu.Unlock()
	t.apply(ctx)
}

// states are the twins' snapshots (status, the live page).
func (t *twins) states() []mcpkeep.Snapshot {
	t.mu.Lock()
	pool := t.mu.pool
	t.mu.Unlock()
	if pool == nil {
		return nil
	}
	return pool.States()
}

// supervisor returns the twin named name (the live page's actions).
func (t *twins) supervisor(name string) (*mcpkeep.Supervisor, bool) {
	t.mu.Lock()
	pool := t.mu.pool
	t.mu.Unlock()
	if pool == nil {
		return nil, false
	}
	return pool.Supervisor(name)
}

// dispose stops every twin through its close barrier (Shutdown).
func (t *twins) dispose(ctx context.Context) error {
	t.mu.Lock()
	pool := t.mu.pool
	t.mu.Unlock()
	if pool == nil {
		return nil
	}
	return pool.Dispose(ctx)
}

// callModern is a 2026-07-28 host's tool call: to the twin of its
// server when it has one, else to the primary pool. The host's public
// name is looked up in the primary's lists (the host's catalog).
func (u *upstream) callModern(ctx context.Context, pool *mcpkeep.Pool, server, public string, args any,
	opts *mcpkeep.CallOptions) (*mcp.CallToolResult, error) {
	if lk, ok := pool.Sink().(tools.Lookuper); ok && u.twins != nil {
		if srv, tool, found := lk.Lookup(public); found && srv == server {
			if sup, wait, ok := u.twins.route(ctx, server); ok {
				o := *opts
				o.WaitForReady, o.ReadyTimeout = true, wait
				return sup.Call(ctx, tool.Name, args, &o)
			}
		}
	}
	return pool.Call(ctx, public, args, opts)
}
