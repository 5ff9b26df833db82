package mcpkeep

import (
	"errors"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
)

// TraceConfig is what a trace header records about s: its resolved policy,
// connect timeout and termination window. It holds no secret.
func (s *Supervisor) TraceConfig() trace.Config {
	return trace.Config{
		Policy:              trace.PolicyOf(s.opts.policy),
		ConnectTimeoutMs:    trace.Ms(s.opts.ConnectTimeout),
		TerminationWindowMs: trace.Ms(s.opts.TerminationWindow),
	}
}

// TraceHeader returns the header of a trace of sups whose offsets count
// from started (take it from the supervisors' clock before Start). One
// supervisor gives a one-server header; several give a multi-server one.
func TraceHeader(started time.Time, sups ...*Supervisor) trace.Header {
	h := trace.Header{Version: trace.Version, Started: started}
	if _, mock := firstClock(sups).(*clock.Mock); mock {
		h.Clock = trace.ClockMock
	} else {
		h.Clock = trace.ClockReal
	}
	switch len(sups) {
	case 0:
	case 1:
		h.Server = sups[0].Name()
		h.Config = sups[0].TraceConfig()
	default:
		h.Servers = make(map[string]trace.Config, len(sups))
		for _, s := range sups {
			h.Servers[s.Name()] = s.TraceConfig()
		}
	}
	return h
}

func firstClock(sups []*Supervisor) any {
	if len(sups) == 0 {
		return nil
	}
	return sups[0].opts.Clock
}

// TraceObserver returns an observer that appends every transition to w,
// with offsets from w's header's Started, but for coalesced list changes
// (Transition.Coalesced): a notification storm costs one line per sync,
// not one per notification. Subscribe it to each supervisor the header
// describes, before Start. It only encodes into w's buffer, so it is fast
// enough for the supervisor's loop; Flush or Close w yourself.
func TraceObserver(w *trace.Writer) Observer {
	h := w.Header()
	return func(t Transition) {
		if !t.Coalesced {
			w.Write(TraceEvent(h, t))
		}
	}
}

// TraceEvent converts one transition for a trace with header h. Errors
// become their text (the supervisor's errors never include env values or
// headers). The guard of a released row is named in the detail.
func TraceEvent(h trace.Header, t Transition) trace.Event {
	e := trace.Event{
		Offset: t.At.Sub(h.Started), Server: t.Server, Gen: t.Gen,
		Event: t.Event, From: t.From, To: t.To, Attempt: t.Attempt,
	}
	if !t.NextRetry.IsZero() {
		e.NextRetry = t.NextRetry.Sub(t.At)
	}
	if t.Err != nil {
		e.Detail = map[string]string{trace.DetailErr: t.Err.Error()}
		if errors.Is(t.Err, ErrConnectTimeout) {
			e.Detail[trace.DetailCause] = trace.CauseConnectTimeout
		}
	}
	if len(fsm.Rows(t.From, t.Event)) > 1 {
		// lost → exhausted alone cannot tell budget spent from reconnect
		// disabled: name the guard that held.
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail[trace.DetailGuard] = t.Guard
	}
	return e
}
