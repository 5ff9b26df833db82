package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpkeep/mcpkeep/fsm"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sticky session state: what the host set up on the server's session
// (resource subscriptions, the logging level, the roots), recorded by the
// supervisor and re-established on every new generation as part of its
// activation, before it is reported connected, so a restarted server
// serves the host exactly as the old one did (docs/design.md §13).
//
// Every change is recorded first, then applied to the established
// generation, if there is one; a generation brings itself up to date by
// reconcile, which converges what its server has to what is recorded,
// serialized per generation. A change made while a generation connects
// is applied by the loop's reconcileLater once it is established.
type sticky struct {
	sync.Mutex
	subs      map[string]bool
	level     mcp.LoggingLevel // "" until SetLoggingLevel
	roots     []*mcp.Root
	haveRoots bool   // Options.Roots or SetRoots: the server is told of roots
	version   uint64 // bumped by every change
}

// applied is what one generation's server has of the sticky state.
//
// reconcile runs on one generation one at a time, taking turn: a channel,
// not a mutex, so that a host's request waiting for its turn gives up when
// its context ends, and every network wait inside a turn is bounded
// (stickyWait). mu guards ver alone and is never held across a request,
// so the loop reading it never waits for a server.
type applied struct {
	turn chan struct{} // capacity 1, made with the generation
	// Owned by the turn's holder.
	subs map[string]bool
	// listening are the URIs unsubscribed on 2026-07-28 whose
	// subscriptions/listen the SDK still holds (reconcile leaves it
	// open): subscribed again, they need no new listen, and the SDK's
	// Subscribe would send none, so no acknowledgement would come.
	listening map[string]bool
	level     mcp.LoggingLevel
	roots     []*mcp.Root

	mu  sync.Mutex // guards ver
	ver uint64
}

func (a *applied) version() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ver
}

func (s *Supervisor) stickyVersion() uint64 {
	s.sticky.Lock()
	defer s.sticky.Unlock()
	return s.sticky.version
}

func (s *Supervisor) stickyRoots() ([]*mcp.Root, bool) {
	s.sticky.Lock()
	defer s.sticky.Unlock()
	return slices.Clone(s.sticky.roots), s.sticky.haveRoots
}

// SubscribeResource subscribes to updates of the resource at uri, now and
// on every later generation; updates reach HostHandlers.ResourceUpdated.
// Made during an outage, it is recorded and applied on recovery (nil is
// returned). When the established server refuses it, the error is
// returned and nothing is recorded; when a restarted server refuses it
// later, it is dropped, logged at warn and told to
// HostHandlers.SubscriptionDropped.
func (s *Supervisor) SubscribeResource(ctx context.Context, uri string) error {
	if uri == "" {
		return fmt.Errorf("mcpkeep: server %q: subscribe: empty URI", s.opts.Name)
	}
	s.sticky.Lock()
	if s.sticky.subs == nil {
		s.sticky.subs = map[string]bool{}
	}
	s.sticky.subs[uri] = true
	s.sticky.version++
	s.sticky.Unlock()
	if g := s.live.Load(); g != nil {
		if err := s.reconcile(ctx, g, g.cs, uri)[uri]; err != nil {
			return fmt.Errorf("mcpkeep: server %q: subscribe %q: %w", s.opts.Name, uri, err)
		}
	} else if st := s.State(); st.State == fsm.Idle || st.IdleStopping {
		// A subscription needs a running server (docs/design.md §20): it
		// starts, and the subscription is applied once it is established.
		s.send(message{kind: mDemand})
	}
	return nil
}

// UnsubscribeResource ends a subscription, now and for later generations.
func (s *Supervisor) UnsubscribeResource(ctx context.Context, uri string) error {
	s.sticky.Lock()
	delete(s.sticky.subs, uri)
	s.sticky.version++
	s.sticky.Unlock()
	if g := s.live.Load(); g != nil {
		s.reconcile(ctx, g, g.cs, "")
	}
	return nil
}

// SetLoggingLevel sets the level of the log messages the server sends
// (to HostHandlers.LoggingMessage), now and on every later generation. It
// returns the established server's error, if any; during an outage the
// level is recorded and applied on recovery. A server that does not
// advertise logging is not asked.
func (s *Supervisor) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := checkLevel(level); err != nil {
		return err
	}
	s.sticky.Lock()
	s.sticky.level = level
	s.sticky.version++
	s.sticky.Unlock()
	s.levelSet.Store(true)
	if g := s.live.Load(); g != nil {
		if err := s.reconcile(ctx, g, g.cs, "")[levelKey]; err != nil {
			return fmt.Errorf("mcpkeep: server %q: logging/setLevel: %w", s.opts.Name, err)
		}
	}
	return nil
}

// SetRoots replaces the roots the host offers, now (the established
// server gets notifications/roots/list_changed) and on every later
// generation. A server learns that the host has roots only when it
// connects: one that connected before roots existed (no Options.Roots,
// no earlier SetRoots) learns of them at its next generation.
func (s *Supervisor) SetRoots(ctx context.Context, roots []*mcp.Root) error {
	for i, r := range roots {
		if r == nil || r.URI == "" {
			return &OptionError{Field: fmt.Sprintf("roots[%d]", i), Rule: "needs a URI"}
		}
	}
	s.sticky.Lock()
	s.sticky.roots = slices.Clone(roots)
	s.sticky.haveRoots = true
	s.sticky.version++
	s.sticky.Unlock()
	if g := s.live.Load(); g != nil {
		s.reconcile(ctx, g, g.cs, "")
	}
	return nil
}

// LoggingLevels are MCP's logging levels, from the most verbose to the
// least.
var LoggingLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// checkLevel is SetLoggingLevel's check of its level, naming the field.
func checkLevel(l mcp.LoggingLevel) error {
	if slices.Contains(LoggingLevels, l) {
		return nil
	}
	return &OptionError{Field: "level", Rule: fmt.Sprintf("must be one of %v, got %q", LoggingLevels, l)}
}

// levelKey is reconcile's key for a failed logging/setLevel (URIs are
// never empty).
const levelKey = ""

// reconcileLater brings an established generation up to date with what
// the host changed while it connected.
func (s *Supervisor) reconcileLater(g *generation) {
	defer s.wg.Done()
	s.reconcile(g.ctx, g, g.cs, "")
}

// reconcile converges generation g's server to the recorded sticky state
// and returns what the server refused, by URI (levelKey for the level).
// Refused subscriptions are forgotten, logged and told to the host, except
// own: the subscription the host is making right now, whose refusal is
// the host's SubscribeResource error. A request cut short by ctx is no
// refusal: it stays recorded for the next reconcile.
//
// Each request is bounded by stickyWait: a server that does not answer
// refuses, so it can neither hold the host's request nor fail the attempt
// that restores its state (docs/design.md §19). A caller whose ctx ends
// while it waits for its turn gets ctx's error (under own, or levelKey
// when own is empty); its change stays recorded for the next reconcile.
func (s *Supervisor) reconcile(ctx context.Context, g *generation, cs *mcp.ClientSession, own string) map[string]error {
	select {
	case g.applied.turn <- struct{}{}:
	case <-ctx.Done():
		return map[string]error{own: context.Cause(ctx)}
	case <-g.ctx.Done():
		return nil
	}
	defer func() { <-g.applied.turn }()
	s.sticky.Lock()
	want := maps.Clone(s.sticky.subs)
	level, roots, ver := s.sticky.level, slices.Clone(s.sticky.roots), s.sticky.version
	s.sticky.Unlock()

	// Requests run on the caller's context bounded by the generation's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()

	refused := map[string]error{}
	caps := &mcp.ServerCapabilities{}
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil {
		caps = res.Capabilities
	}
	a := &g.applied
	if a.subs == nil {
		a.subs = map[string]bool{}
	}
	for _, uri := range slices.Sorted(maps.Keys(want)) {
		if a.subs[uri] {
			continue
		}
		if a.listening[uri] {
			// Its listen is still open, and the server still sends its
			// updates there (docs/design.md §13, subscriptions).
			delete(a.listening, uri)
			a.subs[uri] = true
			continue
		}
		var err error
		if caps.Resources == nil || !caps.Resources.Subscribe {
			err = errNoSubscribe
		} else if modern(cs) {
			err = s.subscribeAndWait(ctx, g, cs, uri)
		} else {
			err = bounded(ctx, func(ctx context.Context) error { return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) })
		}
		if err != nil {
			if g.ctx.Err() != nil || ctx.Err() != nil {
				// The generation ended (the next one reconciles), or the
				// caller gave up: nothing was refused.
				if uri == own {
					refused[uri] = err
				}
				return refused
			}
			refused[uri] = err
			continue
		}
		a.subs[uri] = true
	}
	for _, uri := range slices.Sorted(maps.Keys(a.subs)) {
		if !want[uri] {
			// On 2026-07-28 an unsubscribe ends a subscriptions/listen
			// stream, and a go-sdk server then forgets every list_changed
			// subscription of the session: the stream stays open and its
			// updates are no longer passed on (see subscribed).
			if !modern(cs) {
				_ = bounded(ctx, func(ctx context.Context) error { return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}) })
			} else {
				if a.listening == nil {
					a.listening = map[string]bool{}
				}
				a.listening[uri] = true
			}
			delete(a.subs, uri)
		}
	}
	if level != "" && level != a.level && caps.Logging != nil {
		if err := bounded(ctx, func(ctx context.Context) error {
			return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
		}); err != nil {
			refused[levelKey] = err
		} else {
			a.level = level
		}
	}
	if !sameRoots(a.roots, roots) && g.client != nil {
		replaceRoots(g.client, a.roots, roots)
		a.roots = roots
	}
	a.mu.Lock()
	a.ver = ver
	a.mu.Unlock()
	s.dropRefused(g, refused, own)
	return refused
}

// stickyWait bounds each sticky-state request (subscribe, unsubscribe,
// setLevel). It runs on real time, as subAckWait does: it waits for a
// server, not for the supervisor's own schedule.
const stickyWait = 5 * time.Second

// errNoAnswer is a sticky request's refusal by silence.
var errNoAnswer = fmt.Errorf("the server did not answer within %s (counted as a refusal)", stickyWait)

// bounded runs one sticky request with stickyWait. When the bound, not
// ctx, ended it, the error is errNoAnswer: a refusal, where the end of ctx
// (the caller gave up, the generation ended) refuses nothing.
func bounded(ctx context.Context, req func(context.Context) error) error {
	rctx, cancel := context.WithTimeoutCause(ctx, stickyWait, errNoAnswer)
	defer cancel()
	err := req(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errNoAnswer) {
		return errNoAnswer
	}
	return err
}

var errNoSubscribe = errors.New("the server does not offer resource subscriptions")

// subscribeAndWait subscribes on 2026-07-28 and waits for the server's
// acknowledgement (see subWait). The SDK never reads the answer to the
// listen, so a refusal is the acknowledgement that does not come: one not
// there within subAckWait is a refusal. The wait runs on real time, as
// the SDK's own does (a server's answer is not the supervisor's timer).
func (s *Supervisor) subscribeAndWait(ctx context.Context, g *generation, cs *mcp.ClientSession, uri string) error {
	answer := g.subWait.expect(uri)
	defer g.subWait.done()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	t := time.NewTimer(subAckWait)
	defer t.Stop()
	var err error
	select {
	case err = <-answer:
	case <-t.C:
		err = errNotAcknowledged
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		// Free the SDK's record of the URI, so a later Subscribe is sent.
		_ = cs.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri})
	}
	return err
}

// subAckWait bounds the wait for a 2026-07-28 subscription's
// acknowledgement, which a server sends at once when it takes one.
const subAckWait = 5 * time.Second

var errNotAcknowledged = errors.New("the server did not acknowledge the subscription (refused)")

// modern reports whether cs speaks protocol 2026-07-28 or later.
func modern(cs *mcp.ClientSession) bool {
	res := cs.InitializeResult()
	return res != nil && res.ProtocolVersion >= "2026-07-28"
}

// subscribed reports whether the host wants updates of uri.
func (s *Supervisor) subscribed(uri string) bool {
	s.sticky.Lock()
	defer s.sticky.Unlock()
	return s.sticky.subs[uri]
}

// level returns the recorded logging level ("" when none was set). On
// protocol 2026-07-28 a level is a property of each request, so every
// request carries it (see withLevel).
func (s *Supervisor) level() mcp.LoggingLevel {
	s.sticky.Lock()
	defer s.sticky.Unlock()
	return s.sticky.level
}

// levelFast is level for the Call hot path: no lock until a level was set.
func (s *Supervisor) levelFast() mcp.LoggingLevel {
	if !s.levelSet.Load() {
		return ""
	}
	return s.level()
}

// withLevel adds the recorded logging level to a request's _meta for a
// server on 2026-07-28, where setLevel does nothing.
func (s *Supervisor) withLevel(g *generation, meta *mcp.Meta, opts *CallOptions) {
	if !g.modern {
		return
	}
	lv := s.level()
	if opts != nil && opts.LogLevel != "" {
		lv = opts.LogLevel
	}
	if lv == "" {
		return
	}
	if *meta == nil {
		*meta = mcp.Meta{}
	}
	(*meta)[mcp.MetaKeyLogLevel] = string(lv)
}

// dropRefused forgets refused subscriptions and tells the host, but for
// own (see reconcile), which is only forgotten; a cancelled own is kept.
func (s *Supervisor) dropRefused(g *generation, refused map[string]error, own string) {
	var dropped []string
	s.sticky.Lock()
	for uri, err := range refused {
		if uri == levelKey || !s.sticky.subs[uri] {
			continue
		}
		if uri == own {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				delete(s.sticky.subs, uri)
			}
			continue
		}
		delete(s.sticky.subs, uri)
		dropped = append(dropped, uri)
	}
	s.sticky.Unlock()
	slices.Sort(dropped)
	for _, uri := range dropped {
		s.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "subscription dropped",
			slog.String("server", s.opts.Name), slog.Uint64("gen", g.n), slog.String("uri", uri),
			slog.Any("err", refused[uri]))
		if h := s.opts.Host.SubscriptionDropped; h != nil {
			hostNotify(s, g, func() { h(s.opts.Name, uri, refused[uri]) })
		}
	}
}

func sameRoots(a, b []*mcp.Root) bool {
	return slices.EqualFunc(a, b, func(x, y *mcp.Root) bool { return x.URI == y.URI && x.Name == y.Name })
}

// replaceRoots moves a generation's client from old roots to new ones; the
// SDK notifies the client's session of each change (roots/list_changed).
func replaceRoots(c *mcp.Client, old, next []*mcp.Root) {
	var gone []string
	for _, r := range old {
		if !slices.ContainsFunc(next, func(n *mcp.Root) bool { return n.URI == r.URI }) {
			gone = append(gone, r.URI)
		}
	}
	if len(gone) > 0 {
		c.RemoveRoots(gone...)
	}
	if len(next) > 0 {
		c.AddRoots(next...)
	}
}
