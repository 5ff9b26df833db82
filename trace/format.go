package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// Version is the trace format version this package writes and reads.
const Version = 1

// Clock names recorded in Header.Clock.
const (
	ClockReal = "real" // wall clock: offsets are noisy, timing checks allow Slack
	ClockMock = "mock" // injected mock clock: offsets are exact
)

// Slack is how far a real-clock trace may run early against a timer the
// supervisor armed a moment before it recorded the arming transition (the
// stability window). Mock-clock traces get no slack.
const Slack = 50 * time.Millisecond

// Policy is backoff.Policy as a trace records it: durations in
// milliseconds, field names as in the config file (docs/design.md §11).
type Policy struct {
	Enabled        bool    `json:"enabled"`
	InitialDelayMs Ms      `json:"initialDelayMs"`
	MaxDelayMs     Ms      `json:"maxDelayMs"`
	MaxAttempts    int     `json:"maxAttempts"`
	Jitter         float64 `json:"jitter"`
	// StabilityWindowMs is the effective stability window. Traces
	// written before the window had a floor lack it: theirs was maxDelay.
	StabilityWindowMs Ms `json:"stabilityWindowMs,omitempty"`
}

// PolicyOf converts a backoff policy for the header.
func PolicyOf(p backoff.Policy) Policy {
	return Policy{Enabled: p.Enabled, InitialDelayMs: Ms(p.InitialDelay), MaxDelayMs: Ms(p.MaxDelay),
		MaxAttempts: p.MaxAttempts, Jitter: p.Jitter, StabilityWindowMs: Ms(p.StabilityWindow())}
}

// Backoff converts back; the result is not resolved.
func (p Policy) Backoff() backoff.Policy {
	window := time.Duration(p.StabilityWindowMs)
	if window == 0 {
		window = time.Duration(p.MaxDelayMs) // a trace from before the floor
	}
	return backoff.Policy{Enabled: p.Enabled, InitialDelay: time.Duration(p.InitialDelayMs),
		MaxDelay: time.Duration(p.MaxDelayMs), MaxAttempts: p.MaxAttempts, Jitter: p.Jitter,
		Stability: window}
}

// Config is what one server's events are checked against.
type Config struct {
	Policy              Policy `json:"policy"`
	ConnectTimeoutMs    Ms     `json:"connectTimeoutMs"`
	TerminationWindowMs Ms     `json:"terminationWindowMs"`
}

// Header is the first line of a trace.
type Header struct {
	// Version is written as "mcpkeep_trace"; it must be 1.
	Version int `json:"mcpkeep_trace"`
	// Server names the traced server of a one-server trace. A multi-server
	// trace (a proxy) leaves it empty and lists Servers instead.
	Server string `json:"server,omitempty"`
	// Started is the origin of every event's offset, on the supervisor's
	// clock (the mock clock's epoch in tests).
	Started time.Time `json:"started"`
	// Clock is ClockReal or ClockMock; empty means real.
	Clock string `json:"clock,omitempty"`
	// Config is the one-server configuration, inline in the header.
	Config
	// Servers holds per-server configuration of a multi-server trace; a
	// server not listed uses Config.
	Servers map[string]Config `json:"servers,omitempty"`
	// Note is free text, e.g. the command that recorded the trace.
	Note string `json:"note,omitempty"`
}

// For returns the configuration that applies to server's events.
func (h Header) For(server string) Config {
	if c, ok := h.Servers[server]; ok {
		return c
	}
	return h.Config
}

// Detail keys written by mcpkeep.
const (
	// DetailErr is the error text of failed, closed, released, stuck,
	// reconnect (from established) and drain_timeout transitions. It is the
	// supervisor's error string: it never contains env values or headers.
	DetailErr = "err"
	// DetailGuard is the fsm guard name of the row taken, written for every
	// (from, event) with more than one declared row (released), so a replay
	// can tell "budget spent" from "reconnect disabled".
	DetailGuard = "guard"
	// DetailCause classifies an error where a check or a replay needs it:
	// CauseConnectTimeout on a failed attempt that hit the connect timeout.
	DetailCause = "cause"
)

// CauseConnectTimeout is DetailCause of a connect timeout.
const CauseConnectTimeout = "connect_timeout"

// IsConnectTimeout reports whether e is a failed attempt that hit the
// connect timeout: by DetailCause, or for traces without it by the
// supervisor's error text.
func (e Event) IsConnectTimeout() bool {
	if e.Event != fsm.Failed {
		return false
	}
	if c, ok := e.Detail[DetailCause]; ok {
		return c == CauseConnectTimeout
	}
	return strings.Contains(e.Detail[DetailErr], "connect timeout")
}

// Event is one transition. On the wire:
//
//	{"t":1500.25,"server":"s","gen":2,"event":"retry_due","from":"backing-off","to":"connecting","attempt":1}
type Event struct {
	// Offset from Header.Started ("t", milliseconds with up to 6 decimals).
	Offset time.Duration
	Server string
	Gen    uint64
	Event  fsm.Event
	From   fsm.State
	To     fsm.State
	// Attempt is the number of retries spent in the current outage.
	Attempt int
	// NextRetry is the wait from this event until the armed retry is due
	// ("next_retry_ms"); nonzero only when To is backing-off.
	NextRetry time.Duration
	// Detail carries DetailErr and DetailGuard; nil when empty.
	Detail map[string]string
}

// wireEvent is Event's JSON shape.
type wireEvent struct {
	T         Ms                `json:"t"`
	Server    string            `json:"server"`
	Gen       uint64            `json:"gen"`
	Event     string            `json:"event"`
	From      string            `json:"from"`
	To        string            `json:"to"`
	Attempt   int               `json:"attempt"`
	NextRetry *Ms               `json:"next_retry_ms,omitempty"`
	Detail    map[string]string `json:"detail,omitempty"`
}

func (e Event) wire() wireEvent {
	w := wireEvent{T: Ms(e.Offset), Server: e.Server, Gen: e.Gen, Event: e.Event.String(),
		From: e.From.String(), To: e.To.String(), Attempt: e.Attempt, Detail: e.Detail}
	if e.NextRetry != 0 {
		nr := Ms(e.NextRetry)
		w.NextRetry = &nr
	}
	if len(w.Detail) == 0 {
		w.Detail = nil
	}
	return w
}

func (w wireEvent) event() (Event, error) {
	ev, ok := fsm.ParseEvent(w.Event)
	if !ok {
		return Event{}, fmt.Errorf("%w %q", ErrUnknownEvent, w.Event)
	}
	from, ok := fsm.ParseState(w.From)
	if !ok {
		return Event{}, fmt.Errorf("%w %q in \"from\"", ErrUnknownState, w.From)
	}
	to, ok := fsm.ParseState(w.To)
	if !ok {
		return Event{}, fmt.Errorf("%w %q in \"to\"", ErrUnknownState, w.To)
	}
	e := Event{Offset: time.Duration(w.T), Server: w.Server, Gen: w.Gen, Event: ev, From: from, To: to,
		Attempt: w.Attempt, Detail: w.Detail}
	if w.NextRetry != nil {
		e.NextRetry = time.Duration(*w.NextRetry)
	}
	return e, nil
}

// Ms is a duration written as decimal milliseconds with nanosecond
// precision and no rounding: 1500 ms is 1500, 1.5 µs is 0.0015.
type Ms time.Duration

// MarshalJSON writes the exact decimal.
func (m Ms) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

func (m Ms) String() string {
	d := int64(m)
	neg := d < 0
	if neg {
		d = -d // durations here are never math.MinInt64
	}
	s := strconv.FormatInt(d/1e6, 10)
	if frac := d % 1e6; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

var errMs = errors.New("want milliseconds as a decimal number with at most 6 fraction digits")

// UnmarshalJSON reads a decimal number of milliseconds exactly.
func (m *Ms) UnmarshalJSON(b []byte) error {
	s := string(b)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" || len(fp) > 6 || strings.ContainsAny(ip+fp, "eE+-") {
		return fmt.Errorf("bad milliseconds %s: %w", b, errMs)
	}
	i, err := strconv.ParseInt(ip, 10, 64)
	if err != nil || i > int64(1<<63-1)/1e6-1 {
		return fmt.Errorf("bad milliseconds %s: %w", b, errMs)
	}
	var f int64
	if fp != "" {
		f, err = strconv.ParseInt(fp+strings.Repeat("0", 6-len(fp)), 10, 64)
		if err != nil {
			return fmt.Errorf("bad milliseconds %s: %w", b, errMs)
		}
	}
	d := i*1e6 + f
	if neg {
		d = -d
	}
	*m = Ms(d)
	return nil
}
