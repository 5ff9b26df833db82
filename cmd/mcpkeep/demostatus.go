package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// demoStatus prints the demo's live status and keeps the numbers of its
// summary. On a terminal the latest call result is one line rewritten in
// place and states are coloured; otherwise every line is plain text.
type demoStatus struct {
	out   io.Writer
	tty   bool
	start time.Time
	exit  func(gen uint64) string // the generation's exit status, if known

	transient bool // a call line is showing (terminal only)

	crashes, failures, exhausted int
	lostAt                       time.Time
	recoveries                   []time.Duration
	manualAt                     time.Time
	manualRecovery               time.Duration
	manualSeen                   bool
	callsOK, callsLost           int
	failedFast                   []time.Duration
}

func newDemoStatus(out io.Writer, tty bool, start time.Time, exit func(uint64) string) *demoStatus {
	return &demoStatus{out: out, tty: tty, start: start, exit: exit}
}

func (s *demoStatus) intro(duration, uptime, every time.Duration, p backoff.Policy) {
	s.line("mcpkeep demo: a built-in MCP server (mcpkeep fixture) runs supervised for %v.", duration)
	s.line("It crashes %v after each start; from its 4th start it crashes at once (a crash loop) until the budget is spent.", uptime)
	s.line("Policy: %d retries per outage, %v doubling to %v; %v of uptime resets the budget.",
		p.MaxAttempts, p.InitialDelay, p.MaxDelay, p.StabilityWindow())
	s.line("When the budget runs out the demo reconnects by hand. An echo call runs every %v.", every)
	s.line("")
}

// transition prints one lifecycle step and counts it.
func (s *demoStatus) transition(t mcpkeep.Transition, snap mcpkeep.Snapshot) {
	switch {
	case t.Event == fsm.Closed:
		s.crashes++
		s.lostAt = t.At
	case t.Event == fsm.Failed:
		s.failures++
		s.lostAt = t.At
	case t.To == fsm.Exhausted:
		s.exhausted++
	case t.To == fsm.Established && t.From == fsm.Connecting && t.Gen > 1:
		if !s.manualAt.IsZero() {
			s.manualSeen, s.manualRecovery, s.manualAt = true, t.At.Sub(s.manualAt), time.Time{}
		} else if !s.lostAt.IsZero() {
			s.recoveries = append(s.recoveries, t.At.Sub(s.lostAt))
		}
		s.lostAt = time.Time{}
	}
	if t.From == t.To && t.Event != fsm.Stable {
		return // tools_changed: nothing a user needs to see here
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gen %-2d %-9s %s", t.Gen, t.Event, s.color(t.To, fmt.Sprintf("%-11s", t.To)))
	fmt.Fprintf(&b, " attempt %d/%d  tools %d", t.Attempt, snap.MaxAttempts, snap.Tools)
	switch {
	case t.Event == fsm.Stable:
		b.WriteString("  stayed up: budget reset")
	case !t.NextRetry.IsZero():
		fmt.Fprintf(&b, "  next retry in %v", t.NextRetry.Sub(t.At).Round(time.Millisecond))
	case t.To == fsm.Exhausted:
		b.WriteString("  gave up: tools unregistered")
	}
	if t.To == fsm.Lost {
		why := s.exit(t.Gen)
		if why == "" && t.Err != nil {
			why = t.Err.Error()
		}
		if why != "" {
			fmt.Fprintf(&b, "  (%s)", why)
		}
	}
	s.stamp(t.At, b.String())
}

func (s *demoStatus) manual() {
	s.manualAt = time.Now()
	s.stamp(s.manualAt, "manual Reconnect(): a fresh budget")
}

// call shows one echo call's outcome.
func (s *demoStatus) call(took time.Duration, err error) {
	var msg string
	var nc *mcpkeep.NotConnectedError
	switch {
	case err == nil:
		s.callsOK++
		msg = fmt.Sprintf("call echo: ok in %v", took.Round(time.Microsecond))
	case errors.As(err, &nc):
		s.failedFast = append(s.failedFast, took)
		msg = fmt.Sprintf("call echo: failed fast in %v (%s)", took.Round(time.Microsecond), nc.State)
	case errors.Is(err, mcpkeep.ErrConnectionLost):
		s.callsLost++
		msg = "call echo: lost with its connection (never replayed)"
	default:
		s.failedFast = append(s.failedFast, took)
		msg = fmt.Sprintf("call echo: failed in %v: %v", took.Round(time.Microsecond), err)
	}
	if !s.tty {
		s.stamp(time.Now(), msg)
		return
	}
	s.clearTransient()
	fmt.Fprintf(s.out, "%7s  %s", s.elapsed(time.Now()), msg)
	s.transient = true
}

func (s *demoStatus) note(format string, args ...any) {
	s.stamp(time.Now(), fmt.Sprintf(format, args...))
}

func (s *demoStatus) summary(disposeErr error) {
	s.line("")
	s.line("Summary after %v", s.elapsed(time.Now()))
	row := func(label, format string, args ...any) { s.line("  %-18s %s", label, fmt.Sprintf(format, args...)) }
	row("crashes", "%d (the server died while connected)", s.crashes)
	row("failed connects", "%d", s.failures)
	row("recoveries", "%d automatic, median %v from the loss to serving again", len(s.recoveries), median(s.recoveries))
	if s.exhausted > 0 {
		row("exhausted", "yes: the crash loop spent the retry budget and the tools were unregistered")
	} else {
		row("exhausted", "no (run longer to see the crash loop)")
	}
	if s.manualSeen {
		row("manual reconnect", "yes: serving again %v after Reconnect()", s.manualRecovery.Round(time.Millisecond))
	} else {
		row("manual reconnect", "no")
	}
	row("calls", "%d ok, %d failed fast (median %v), %d lost in flight",
		s.callsOK, len(s.failedFast), median(s.failedFast), s.callsLost)
	if disposeErr != nil {
		row("shutdown", "INCOMPLETE: %v", disposeErr)
	} else {
		row("shutdown", "clean: every process reaped")
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Microsecond)
}

func (s *demoStatus) stamp(at time.Time, msg string) {
	s.line("%7s  %s", s.elapsed(at), msg)
}

func (s *demoStatus) elapsed(at time.Time) string {
	return fmt.Sprintf("%.2fs", at.Sub(s.start).Seconds())
}

func (s *demoStatus) line(format string, args ...any) {
	s.clearTransient()
	fmt.Fprintf(s.out, format+"\n", args...)
}

func (s *demoStatus) clearTransient() {
	if s.transient {
		fmt.Fprint(s.out, "\r\033[K")
		s.transient = false
	}
}

// color wraps text in the ANSI colour of state on a terminal.
func (s *demoStatus) color(st fsm.State, text string) string {
	if !s.tty {
		return text
	}
	code := "33" // yellow: on the way
	switch st {
	case fsm.Established:
		code = "32"
	case fsm.Exhausted:
		code = "31"
	case fsm.Draining, fsm.Disposed:
		code = "2"
	}
	return "\033[" + code + "m" + text + "\033[0m"
}
