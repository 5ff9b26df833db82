package proxy

import (
	"errors"
	"time"

	"log/slog"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server. The zero value serves a config's servers
// under "<server>__<name>" names, logging nothing.
type Options struct {
	// Logger receives the proxy's logs and, through Pool.Logger when that
	// is nil, the supervisors'; nil discards.
	Logger *slog.Logger
	// SDKLogger receives the go-sdk server's own logs; nil discards.
	SDKLogger *slog.Logger
	// Implementation is what the proxy tells hosts it is; nil is
	// {"mcpkeep", "devel"}.
	Implementation *mcp.Implementation
	// Pool is the base of the pool the proxy builds at its first host (or
	// at Start): Clock, Rand, Observer, Namer and Opener are used as
	// given; Sink, Catalog, Host and Roots are the proxy's own.
	Pool mcpkeep.PoolOptions
	// Mirror, when set, names the one server whose serverInfo,
	// capabilities and instructions answer the host's initialize
	// (`mcpkeep run`, docs/design.md §15). Give Pool.Namer tools.OwnNames
	// with it to keep the server's names.
	Mirror string
	// InitWait bounds how long the host's initialize waits for the
	// servers' first connections; zero is DefaultInitWait.
	InitWait time.Duration
	// InitWaitFrom, when set, is the instant InitWait counts from (the
	// host's clock: a stdio host times its server from the spawn, so the
	// command gives its own start); zero counts from the servers' start.
	InitWaitFrom time.Time
	// Metrics counts relayed requests; nil counts nothing. Transitions
	// reach metrics through Pool.Observer.
	Metrics Metrics
	// DrainGrace is how long Shutdown lets requests in flight finish
	// before it cancels them; zero is DefaultDrainGrace.
	DrainGrace time.Duration
	// TypedRelay relays every tools/call of a Serve host through the SDK's
	// typed path, as the Streamable HTTP front does, instead of the fast
	// path (docs/design.md §24): for comparison.
	TypedRelay bool
	// StateKey seals the requestState of a 2026-07-28 host's multi round
	// trip (AES-256-GCM, docs/design.md §24); nil draws a random key per
	// Server (a state then outlives neither the process nor the Server).
	StateKey *[32]byte
	// SessionIdle ends an HTTP host session that sent nothing for this
	// long (Handler); zero is DefaultSessionIdle, negative never.
	SessionIdle time.Duration
	// Replicas, when set, makes this Server one of several replicas
	// (docs/design.md §26): its handles name it, and /mcp forwards a
	// request for another replica's handle to that replica.
	Replicas *Replicas
	// Tracer, when set, traces each host request the proxy relays
	// (docs/design.md §27); nil traces nothing (a host's trace context
	// still reaches the server).
	Tracer mcpkeep.Tracer
	// Tasks configure the task engine behind the tasks extension
	// (docs/design.md §25): its Store (nil keeps finished tasks in
	// memory; the command gives a tasks.DiskStore under the cache
	// directory), bounds and TTLs. IsLost and RPCError are the proxy's.
	Tasks tasks.Options
}

// Defaults of Options.
const (
	// DefaultInitWait: hosts give a server about 10 s to start (some in
	// all), so the proxy answers well within that: half of it
	// (docs/design.md §14, §20).
	DefaultInitWait = 5 * time.Second
	// DefaultDrainGrace is what Shutdown gives requests in flight.
	DefaultDrainGrace = 2 * time.Second
	// DefaultSessionIdle forgets HTTP host sessions that went quiet.
	DefaultSessionIdle = 30 * time.Minute
)

// Metrics is where the proxy reports each request it relays to a server
// (method is the MCP method: tools/call, prompts/get, resources/read...).
// It is called on the request's goroutine and must be quick.
type Metrics interface {
	Request(server, method string, took time.Duration, err error)
}

// ErrStrictStartup is what StartupError wraps when a server with
// failOnStartupError did not start.
var ErrStrictStartup = errors.New("mcpkeep: strict startup failed")
