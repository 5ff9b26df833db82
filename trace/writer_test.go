package trace_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
)

func header() trace.Header {
	p := backoff.Default()
	p.MaxAttempts = 3
	return trace.Header{Server: "s", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Clock: trace.ClockMock,
		Config: trace.Config{Policy: trace.PolicyOf(p), ConnectTimeoutMs: trace.Ms(30 * time.Second), TerminationWindowMs: trace.Ms(10 * time.Second)}}
}

// crashRecovered is a crash → recovered run as the supervisor emits it.
func crashRecovered() []trace.Event {
	return []trace.Event{
		{Offset: 3 * time.Millisecond, Server: "s", Gen: 1, Event: fsm.Connected, From: fsm.Connecting, To: fsm.Established},
		{Offset: 1000 * time.Millisecond, Server: "s", Gen: 1, Event: fsm.Closed, From: fsm.Established, To: fsm.Lost, Detail: map[string]string{"err": "EOF"}},
		{Offset: 1001*time.Millisecond + 500*time.Microsecond, Server: "s", Gen: 1, Event: fsm.Released, From: fsm.Lost, To: fsm.BackingOff, Attempt: 1, NextRetry: 500 * time.Millisecond,
			Detail: map[string]string{"err": "EOF", "guard": fsm.BudgetLeft.Name}},
		{Offset: 1501*time.Millisecond + 500*time.Microsecond, Server: "s", Gen: 2, Event: fsm.RetryDue, From: fsm.BackingOff, To: fsm.Connecting, Attempt: 1},
		{Offset: 1502 * time.Millisecond, Server: "s", Gen: 2, Event: fsm.Connected, From: fsm.Connecting, To: fsm.Established, Attempt: 1},
		{Offset: 31502 * time.Millisecond, Server: "s", Gen: 2, Event: fsm.Stable, From: fsm.Established, To: fsm.Established},
		{Offset: 40000 * time.Millisecond, Server: "s", Gen: 2, Event: fsm.Dispose, From: fsm.Established, To: fsm.Draining},
		{Offset: 40001 * time.Millisecond, Server: "s", Gen: 2, Event: fsm.Drained, From: fsm.Draining, To: fsm.Disposed},
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, header())
	for _, e := range crashRecovered() {
		w.Write(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Write(crashRecovered()[0]) // after Close: dropped
	if w.Events() != len(crashRecovered()) {
		t.Fatalf("Events() = %d", w.Events())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1+len(crashRecovered()) {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if want := `{"t":1001.5,"server":"s","gen":1,"event":"released","from":"lost","to":"backing-off","attempt":1,"next_retry_ms":500,"detail":{"err":"EOF","guard":"reconnect enabled ∧ budget left"}}`; lines[3] != want {
		t.Errorf("line 4:\n got %s\nwant %s", lines[3], want)
	}
	h, evs, err := trace.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := header()
	want.Version = trace.Version
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(crashRecovered(), evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if err := trace.Check(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
}

func TestMsExact(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 999, 1000, 1_000_000, 1_500_001, 123*time.Hour + 7, -1_500_000} {
		b, _ := trace.Ms(d).MarshalJSON()
		var m trace.Ms
		if err := m.UnmarshalJSON(b); err != nil || time.Duration(m) != d {
			t.Errorf("%d → %s → %d, %v", d, b, m, err)
		}
	}
	for _, bad := range []string{`1e3`, `1.0000001`, `"1"`, `.5`, `1.-5`, `99999999999999999999`} {
		var m trace.Ms
		if err := m.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted as %d", bad, m)
		}
	}
}

// A multi-server header without an inline config (mcpkeep.TraceHeader of
// several supervisors) is written with a zero one; it must read back.
func TestMultiServerHeaderRoundTrip(t *testing.T) {
	h := header()
	h.Servers = map[string]trace.Config{"a": h.Config, "b": h.Config}
	h.Server, h.Config = "", trace.Config{}
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, h)
	w.Write(trace.Event{Offset: time.Millisecond, Server: "a", Gen: 1, Event: fsm.Connected, From: fsm.Connecting, To: fsm.Established})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := trace.Check(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
}
