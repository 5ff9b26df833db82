package mcpkeep

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminationWindow bounds a close barrier when neither Options
// nor the Opener set one (docs/design.md §6). The default connect timeout is
// config.DefaultConnectTimeout.
const DefaultTerminationWindow = 10 * time.Second

// Options configure one Supervisor. Only Name and Opener are required.
type Options struct {
	// Name is the server's name: the prefix of its public tool names and
	// the "server" attribute of its logs. It must satisfy
	// tools.CheckServerName (no two servers can then produce one public name).
	Name string
	// Opener yields one fresh transport per generation.
	Opener transport.Opener
	// Policy is the reconnect policy; the zero value means backoff.Default().
	// It is resolved at New: a bad policy is an error naming the field.
	Policy backoff.Policy
	// ConnectTimeout bounds spawn + handshake + initial tools/list
	// (default config.DefaultConnectTimeout, 30 s).
	ConnectTimeout time.Duration
	// TerminationWindow bounds a generation's close barrier; past it the
	// supervisor fails closed (stuck). Zero takes the Opener's own window
	// when it has one (transport.TerminationWindower), else 10 s.
	TerminationWindow time.Duration
	// FailOnStartupError makes Start return the activation attempt's error
	// (and dispose the supervisor) instead of retrying in the background.
	FailOnStartupError bool
	// Logger receives the lifecycle logs (docs/design.md §10); nil discards.
	Logger *slog.Logger
	// Clock drives every timer of the supervisor; nil is the real clock.
	Clock clock.Clock
	// Rand is the jitter source; nil is math/rand/v2's global source.
	Rand backoff.Rand
	// Sink receives the server's tools; nil is a private tools.Set.
	Sink tools.Sink
	// Catalog receives the server's prompts, resources and resource
	// templates; nil is a private tools.Catalog.
	Catalog tools.CatalogSink
	// Host holds the host's answers to what the server may ask of it
	// (sampling, elicitation, roots) and its receivers of what the server
	// tells it (log messages, resource updates, progress). The server is
	// told of exactly the capabilities the host provides here.
	Host HostHandlers
	// Roots, when non-nil (even empty), are the roots the host offers
	// from the first generation on: the server is told of the roots
	// capability. SetRoots replaces them later; a server learns of the
	// capability only at connect, so a host that will call SetRoots
	// should give Roots (or Host.ListRoots).
	Roots []*mcp.Root
	// Namer maps original tool names to public ones; nil is tools.PublicNames.
	Namer tools.Namer
	// Limits bound the tool list; zero fields take tools' defaults.
	Limits tools.Limits
	// Client identifies mcpkeep to the server; nil is {"mcpkeep", Version}.
	Client *mcp.Implementation
	// Expose is what the host may see of the server (docs/design.md §21):
	// tool and prompt filters and tool overrides, applied to every
	// generation's lists before names are made public. A filtered tool is
	// neither registered nor callable. nil shows everything.
	Expose *tools.Policy
	// NoReplay: a call lost to the server's crash is never sent again.
	// Otherwise a tool declaring readOnlyHint or idempotentHint has its
	// lost call sent once more on the next generation (docs/design.md §21).
	NoReplay bool
	// ReplayWait bounds the wait for the next generation before a replay;
	// it is at least ConnectTimeout.
	ReplayWait time.Duration
	// Cache keeps the server's catalog between runs (docs/design.md §20):
	// a cached catalog is registered before the first connect, and Start
	// does not wait for a server that has one or that the cache remembers
	// as not coming (unless FailOnStartupError). nil keeps nothing.
	Cache CatalogStore
	// Lazy: with a cached catalog the server is not started until a
	// request needs it (it starts idle); without one it is started once
	// to learn its catalog and stopped when idle (docs/design.md §20).
	Lazy bool
	// IdleStop stops an established server that had no request in
	// flight, no resource subscription and no request for this long,
	// through its close barrier, until the next request. Zero is off for
	// an eager server and DefaultIdleStop for a lazy one; negative is off.
	IdleStop time.Duration
}

// Version is mcpkeep's version as reported to servers.
var Version = "dev"

// resolved is Options after defaults and validation; the loop reads it
// without locks because it never changes after New.
type resolved struct {
	Options
	policy backoff.Policy
	limits tools.Limits // Limits with every zero field at its default
	// idleStop is IdleStop with its default; ≤ 0 is off.
	idleStop time.Duration
}

func (o Options) resolve() (resolved, error) {
	r := resolved{Options: o}
	if err := tools.CheckServerName(o.Name); err != nil {
		return r, &OptionError{Field: "name", Err: err}
	}
	if o.Opener == nil {
		return r, &OptionError{Field: "opener", Rule: "is required"}
	}
	if o.Host.CreateMessage != nil && o.Host.CreateMessageWithTools != nil {
		return r, &OptionError{Field: "host.createMessageWithTools", Rule: "cannot be set together with host.createMessage"}
	}
	p := o.Policy
	if p == (backoff.Policy{}) {
		p = backoff.Default()
	}
	p, err := p.Resolve()
	if err != nil {
		return r, &OptionError{Field: "policy", Err: err}
	}
	r.policy = p
	switch {
	case o.ConnectTimeout < 0:
		return r, &OptionError{Field: "connectTimeout", Rule: "must be > 0, got " + o.ConnectTimeout.String()}
	case o.ConnectTimeout == 0:
		r.ConnectTimeout = config.DefaultConnectTimeout
	}
	switch {
	case o.TerminationWindow < 0:
		return r, &OptionError{Field: "terminationWindow", Rule: "must be > 0, got " + o.TerminationWindow.String()}
	case o.TerminationWindow == 0:
		r.TerminationWindow = DefaultTerminationWindow
		if w, ok := o.Opener.(transport.TerminationWindower); ok && w.TerminationWindow() > 0 {
			r.TerminationWindow = w.TerminationWindow()
		}
	}
	r.idleStop = o.IdleStop
	if o.IdleStop == 0 && o.Lazy {
		r.idleStop = DefaultIdleStop
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.Clock == nil {
		r.Clock = clock.New()
	}
	if r.Rand == nil {
		r.Rand = globalRand{}
	}
	if r.Sink == nil {
		r.Sink = tools.NewSet(o.Limits)
	}
	if r.Catalog == nil {
		r.Catalog = tools.NewCatalog(o.Limits)
	}
	if r.Namer == nil {
		r.Namer = tools.PublicNames
	}
	r.limits = withDefaults(o.Limits)
	if r.Client == nil {
		r.Client = &mcp.Implementation{Name: "mcpkeep", Version: Version}
	}
	return r, nil
}

// ServerOptions returns the supervisor options of a configured server,
// with the transport from s.Opener(logger). The caller adds what a config
// file does not say (Sink, Clock, Rand, ...).
func ServerOptions(s config.Server, logger *slog.Logger) (Options, error) {
	op, err := s.Opener(logger)
	if err != nil {
		return Options{}, err
	}
	return Options{
		Name:               s.Name,
		Opener:             op,
		Policy:             s.Reconnect,
		ConnectTimeout:     s.ConnectTimeout,
		FailOnStartupError: s.FailOnStartupError,
		Logger:             logger,
		Expose:             s.Policy(),
		NoReplay:           !s.ReplaySafeCalls,
		ReplayWait:         s.WaitForReady,
		Lazy:               s.Lazy,
		IdleStop:           s.IdleStop,
	}, nil
}

// withDefaults fills l's zero (or negative) fields with tools' defaults.
func withDefaults(l tools.Limits) tools.Limits {
	d := tools.DefaultLimits()
	for _, f := range []struct{ v, d *int }{{&l.MaxTools, &d.MaxTools}, {&l.MaxSchemaBytes, &d.MaxSchemaBytes},
		{&l.MaxPrompts, &d.MaxPrompts}, {&l.MaxResources, &d.MaxResources}, {&l.MaxTemplates, &d.MaxTemplates}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return l
}

type globalRand struct{}

func (globalRand) Float64() float64 { return rand.Float64() }
