package trace

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// Summary describes a valid trace.
type Summary struct {
	Header   Header
	Events   int
	Duration time.Duration // offset of the last event
	Servers  []ServerSummary
}

// ServerSummary describes one server's events.
type ServerSummary struct {
	Name      string
	Events    int
	Gens      uint64    // the last generation seen
	Final     fsm.State // the state after the last event
	Losses    int       // failed and closed transitions
	Exhausted int       // transitions into exhausted
}

// String is the one-line summary `mcpkeep replay` prints.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "valid trace: %d events over %s", s.Events, s.Duration.Round(time.Millisecond))
	for _, sv := range s.Servers {
		fmt.Fprintf(&b, "; %s: %d gens, %d losses, %d exhausted, final %s", sv.Name, sv.Gens, sv.Losses, sv.Exhausted, sv.Final)
	}
	return b.String()
}

// Check reads a whole trace and checks it against the declared lifecycle
// (package fsm) and the structural invariants; see the package doc. The
// error, if any, is a *LineError naming the first bad line.
func Check(r io.Reader) error {
	_, err := Summarize(r)
	return err
}

// Summarize is Check returning a summary of a valid trace.
func Summarize(r io.Reader) (Summary, error) {
	tr := NewReader(r)
	h, err := tr.Header()
	if err != nil {
		return Summary{}, err
	}
	c := NewChecker(h)
	for {
		e, err := tr.Next()
		if err == io.EOF {
			return c.Summary(), nil
		}
		if err != nil {
			return Summary{}, err
		}
		if err := c.Add(e); err != nil {
			return Summary{}, &LineError{Line: tr.Line(), Err: err}
		}
	}
}

// Checker checks events one at a time: a fresh fsm.Machine per server,
// started at the first event's from-state.
type Checker struct {
	h       Header
	n       int
	last    time.Duration
	servers map[string]*serverCheck
}

type serverCheck struct {
	ServerSummary
	cfg  Config
	m    *fsm.Machine
	prev Event
	// Offsets at which the current timers were armed; -1 when unknown.
	connectingAt, establishedAt, lostAt, drainingAt time.Duration
	// reborn marks the first event of a new incarnation of the server.
	reborn bool
}

// NewChecker returns a Checker for a trace with header h.
func NewChecker(h Header) *Checker {
	return &Checker{h: h, servers: map[string]*serverCheck{}}
}

// Summary describes the events added so far.
func (c *Checker) Summary() Summary {
	s := Summary{Header: c.h, Events: c.n, Duration: c.last}
	for _, sv := range c.servers {
		s.Servers = append(s.Servers, sv.ServerSummary)
	}
	sort.Slice(s.Servers, func(i, j int) bool { return s.Servers[i].Name < s.Servers[j].Name })
	return s
}

func (c *Checker) slack() time.Duration {
	if c.h.Clock == ClockMock {
		return 0
	}
	return Slack
}

// Add checks the next event. The error names the reason, without a line.
func (c *Checker) Add(e Event) error {
	s := c.servers[e.Server]
	if s == nil {
		s = &serverCheck{ServerSummary: ServerSummary{Name: e.Server}, cfg: c.h.For(e.Server), m: fsm.NewAt(e.From),
			connectingAt: -1, establishedAt: -1, lostAt: -1, drainingAt: -1}
		if e.Gen == 1 && e.From == fsm.Connecting {
			// Gen 1 entered connecting at Start, which is not a transition;
			// the trace's start (taken before Start) is a lower bound.
			s.connectingAt = 0
		}
	}
	if s.Events > 0 && s.m.State() == fsm.Disposed && e.Gen == 1 {
		// A new supervisor of the same name (a reload replaced a changed
		// server): a new incarnation, starting again at gen 1. Its Start
		// is not a transition; the old one's disposal bounds it below.
		s = &serverCheck{ServerSummary: s.ServerSummary, cfg: s.cfg, m: fsm.NewAt(e.From), prev: s.prev,
			connectingAt: s.prev.Offset, establishedAt: -1, lostAt: -1, drainingAt: -1, reborn: true}
	}
	if err := c.check(s, e); err != nil {
		return err
	}
	s.reborn = false
	c.servers[e.Server] = s
	c.n++
	c.last = max(c.last, e.Offset)
	s.prev = e
	s.Events++
	s.Gens = e.Gen
	s.Final = e.To
	if e.From != e.To { // internal rows are the only self-transitions
		switch e.To {
		case fsm.Connecting:
			s.connectingAt = e.Offset
		case fsm.Established:
			s.establishedAt = e.Offset
		case fsm.Lost:
			s.lostAt = e.Offset
			s.Losses++
		case fsm.Exhausted:
			s.Exhausted++
		case fsm.Draining:
			s.drainingAt = e.Offset
		}
	}
	return nil
}

func (c *Checker) check(s *serverCheck, e Event) error {
	first := s.Events == 0
	prev := s.prev
	// Time and generations only move forward (per server: several
	// supervisors may interleave their lines by microseconds).
	if !first && e.Offset < prev.Offset {
		return fmt.Errorf("%w: t=%s ms is before t=%s ms of %s's previous event", ErrTimeBackwards, Ms(e.Offset), Ms(prev.Offset), e.Server)
	}
	if s.m.State() == fsm.Disposed {
		return fmt.Errorf("%w: %s %s after %s was disposed", ErrAfterDisposed, e.Server, e.Event, e.Server)
	}
	if e.From != s.m.State() {
		return fmt.Errorf("%w: %s from %s, but %s is in %s", ErrIllegal, e.Event, e.From, e.Server, s.m.State())
	}
	row, err := c.row(s, e)
	if err != nil {
		return err
	}
	t, err := s.m.Fire(e.Event, factsFor(row.Guard))
	if err != nil || t.To != e.To {
		return fmt.Errorf("%w: the machine refuses %s --%s--> %s: %v", ErrIllegal, e.From, e.Event, e.To, err)
	}
	maxA := s.cfg.Policy.MaxAttempts
	if e.Attempt < 0 || e.Attempt > maxA {
		return fmt.Errorf("%w: I4: attempt %d outside 0..%d", ErrInvariant, e.Attempt, maxA)
	}
	if e.Gen == 0 && !(e.From == fsm.Idle || e.From == fsm.Draining) {
		// Only a lazy server that started idle has no generation yet, and
		// only until its first demand (docs/design.md §20).
		return fmt.Errorf("%w: gen 0", ErrInvariant)
	}
	entering := e.To == fsm.Connecting && e.From != fsm.Connecting
	if !first && !s.reborn {
		switch {
		case e.Gen < prev.Gen:
			return fmt.Errorf("%w: gen goes backwards from %d to %d", ErrInvariant, prev.Gen, e.Gen)
		case entering && e.Gen != prev.Gen+1:
			return fmt.Errorf("%w: entering connecting must start gen %d, got gen %d", ErrInvariant, prev.Gen+1, e.Gen)
		case !entering && e.Gen != prev.Gen:
			return fmt.Errorf("%w: gen changes from %d to %d outside entering connecting", ErrInvariant, prev.Gen, e.Gen)
		}
		want := prev.Attempt
		switch {
		case e.Event == fsm.Released && e.To == fsm.BackingOff:
			want++
		case e.Event == fsm.Stable, e.Event == fsm.Reconnect && (e.From == fsm.Established || e.From == fsm.Exhausted):
			want = 0
		}
		if e.Attempt != want {
			return fmt.Errorf("%w: attempt %d after %s, want %d (was %d)", ErrInvariant, e.Attempt, e.Event, want, prev.Attempt)
		}
	}
	if err := c.checkPolicy(s, e, row); err != nil {
		return err
	}
	return c.checkTiming(s, e)
}

// row picks the declared row the event took. Several rows share
// (released, lost → exhausted); the detail's guard names one, else the
// policy decides.
func (c *Checker) row(s *serverCheck, e Event) (fsm.Transition, error) {
	rows := fsm.Rows(e.From, e.Event)
	if len(rows) == 0 {
		return fsm.Transition{}, fmt.Errorf("%w: %s is not declared in state %s", ErrIllegal, e.Event, e.From)
	}
	var match []fsm.Transition
	var tos []string
	for _, r := range rows {
		tos = append(tos, r.To.String())
		if r.To == e.To {
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return fsm.Transition{}, fmt.Errorf("%w: %s --%s--> %s is not declared (%s leads to %s)", ErrIllegal, e.From, e.Event, e.To, e.Event, strings.Join(tos, " or "))
	}
	guard, named := e.Detail[DetailGuard]
	if !named {
		if len(match) == 1 {
			return match[0], nil
		}
		want := fsm.BudgetSpent.Name
		if !s.cfg.Policy.Enabled {
			want = fsm.ReconnectOff.Name
		}
		guard = want
	}
	for _, r := range match {
		if r.Guard.Name == guard {
			return r, nil
		}
	}
	return fsm.Transition{}, fmt.Errorf("%w: guard %q is not declared on %s --%s--> %s", ErrIllegal, guard, e.From, e.Event, e.To)
}

func factsFor(g fsm.Guard) fsm.Facts {
	switch g.Name {
	case fsm.BudgetSpent.Name:
		return fsm.Facts{BudgetSpent: true}
	case fsm.ReconnectOff.Name:
		return fsm.Facts{ReconnectDisabled: true}
	case fsm.SignIn.Name:
		return fsm.Facts{SignInRequired: true}
	case fsm.StoppingForIdle.Name:
		return fsm.Facts{IdleStop: true}
	}
	return fsm.Facts{}
}

// checkPolicy checks the released guards and the retry delay against the
// header's policy.
func (c *Checker) checkPolicy(s *serverCheck, e Event, row fsm.Transition) error {
	p := s.cfg.Policy
	switch row.Guard.Name {
	case fsm.BudgetLeft.Name, fsm.BudgetSpent.Name, fsm.SignIn.Name:
		if !p.Enabled {
			return fmt.Errorf("%w: %q, but the header's policy has reconnect disabled", ErrInvariant, row.Guard.Name)
		}
		if row.Guard.Name == fsm.BudgetSpent.Name && e.Attempt != p.MaxAttempts {
			return fmt.Errorf("%w: budget spent at attempt %d of %d", ErrInvariant, e.Attempt, p.MaxAttempts)
		}
	case fsm.ReconnectOff.Name:
		if p.Enabled {
			return fmt.Errorf("%w: %q, but the header's policy has reconnect enabled", ErrInvariant, row.Guard.Name)
		}
	}
	if e.To != fsm.BackingOff || e.From == fsm.BackingOff {
		if e.NextRetry != 0 {
			return fmt.Errorf("%w: next_retry_ms on a transition to %s", ErrInvariant, e.To)
		}
		return nil
	}
	// Delay(n)·(1−j·U) for U in [0,1): in (d(1−j), d], less the moment
	// between arming the timer and recording the event.
	d := p.Backoff().Delay(e.Attempt)
	lo := d - time.Duration(float64(d)*p.Jitter) - c.slack()
	if e.NextRetry <= 0 || e.NextRetry > d || e.NextRetry < lo {
		return fmt.Errorf("%w: next_retry_ms %s for attempt %d, the policy allows %s..%s", ErrInvariant, Ms(e.NextRetry), e.Attempt, Ms(max(lo, 0)), Ms(d))
	}
	return nil
}

// checkTiming checks that no timer fired before it was due.
func (c *Checker) checkTiming(s *serverCheck, e Event) error {
	slack := c.slack()
	early := func(what string, since, d time.Duration) error {
		if since >= 0 && e.Offset < since+d-slack {
			return fmt.Errorf("%w: %s at t=%s ms, before t=%s+%s ms", ErrEarly, what, Ms(e.Offset), Ms(since), Ms(d))
		}
		return nil
	}
	switch e.Event {
	case fsm.RetryDue:
		if s.prev.To == fsm.BackingOff && s.Events > 0 {
			// Exact even on a real clock: the recorded wait is measured
			// from the recorded instant.
			due := s.prev.Offset + s.prev.NextRetry
			if e.Offset < due-min(slack, time.Millisecond) {
				return fmt.Errorf("%w: retry_due at t=%s ms, the retry was due at t=%s ms", ErrEarly, Ms(e.Offset), Ms(due))
			}
		}
	case fsm.Stable:
		return early("stable", s.establishedAt, s.cfg.Policy.Backoff().StabilityWindow())
	case fsm.Stuck:
		return early("stuck", s.lostAt, time.Duration(s.cfg.TerminationWindowMs))
	case fsm.DrainTimeout:
		return early("drain_timeout", s.drainingAt, time.Duration(s.cfg.TerminationWindowMs))
	case fsm.Failed:
		if e.IsConnectTimeout() {
			return early("connect timeout", s.connectingAt, time.Duration(s.cfg.ConnectTimeoutMs))
		}
	}
	return nil
}
