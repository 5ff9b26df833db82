package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/trace"
)

// hdr is a valid one-server header: policy 500 ms doubling to 30 s, 3
// attempts, connect timeout 30 s, termination window 10 s.
const hdr = `{"mcpkeep_trace":1,"server":"s","started":"2026-01-02T03:04:05Z","clock":"mock","policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":3,"jitter":0},"connectTimeoutMs":30000,"terminationWindowMs":10000}`

// ev renders one event line.
func ev(t, gen int, event, from, to string, attempt int, extra string) string {
	return fmt.Sprintf(`{"t":%d,"server":"s","gen":%d,"event":%q,"from":%q,"to":%q,"attempt":%d%s}`, t, gen, event, from, to, attempt, extra)
}

// good is a valid trace: crash, retry, recovered, stable, crash loop to
// exhausted, manual reconnect, dispose.
var good = []string{
	hdr,
	ev(3, 1, "connected", "connecting", "established", 0, ""),
	ev(1000, 1, "closed", "established", "lost", 0, `,"detail":{"err":"EOF"}`),
	ev(1000, 1, "released", "lost", "backing-off", 1, `,"next_retry_ms":500,"detail":{"guard":"reconnect enabled ∧ budget left"}`),
	ev(1500, 2, "retry_due", "backing-off", "connecting", 1, ""),
	ev(1500, 2, "connected", "connecting", "established", 1, ""),
	ev(1700, 2, "tools_changed", "established", "established", 1, ""),
	ev(31500, 2, "stable", "established", "established", 0, ""),
	ev(40000, 2, "closed", "established", "lost", 0, ""),
	ev(40000, 2, "released", "lost", "backing-off", 1, `,"next_retry_ms":500`),
	ev(40500, 3, "retry_due", "backing-off", "connecting", 1, ""),
	ev(70500, 3, "failed", "connecting", "lost", 1, `,"detail":{"err":"connect timeout after 30s"}`),
	ev(70500, 3, "released", "lost", "backing-off", 2, `,"next_retry_ms":1000`),
	ev(71500, 4, "retry_due", "backing-off", "connecting", 2, ""),
	ev(71500, 4, "failed", "connecting", "lost", 2, `,"detail":{"err":"boom"}`),
	ev(71500, 4, "released", "lost", "backing-off", 3, `,"next_retry_ms":2000`),
	ev(73500, 5, "retry_due", "backing-off", "connecting", 3, ""),
	ev(73500, 5, "failed", "connecting", "lost", 3, ""),
	ev(73500, 5, "released", "lost", "exhausted", 3, `,"detail":{"guard":"reconnect enabled ∧ budget spent"}`),
	ev(80000, 6, "reconnect", "exhausted", "connecting", 0, ""),
	ev(80000, 6, "connected", "connecting", "established", 0, ""),
	ev(90000, 6, "dispose", "established", "draining", 0, ""),
	ev(90000, 6, "drained", "draining", "disposed", 0, ""),
}

func join(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// with returns good with line n (1-based) replaced, or inserted after n-1
// when insert is set.
func with(n int, line string, insert bool) string {
	out := append([]string(nil), good[:n-1]...)
	out = append(out, line)
	if insert {
		out = append(out, good[n-1:]...)
	} else {
		out = append(out, good[n:]...)
	}
	return join(out...)
}

func TestCheckGood(t *testing.T) {
	s, err := trace.Summarize(strings.NewReader(join(good...)))
	if err != nil {
		t.Fatal(err)
	}
	want := "valid trace: 22 events over 1m30s; s: 6 gens, 5 losses, 1 exhausted, final disposed"
	if got := s.String(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	// Blank lines are ignored; line numbers still count them.
	if err := trace.Check(strings.NewReader("\n" + join(good...) + "\n\n")); err != nil {
		t.Fatal(err)
	}
}

func TestCheckBad(t *testing.T) {
	rows := []struct {
		name  string
		trace string
		line  int
		is    error
		msg   string // substring of the error
	}{
		{"empty file", "", 1, trace.ErrNoHeader, "missing header"},
		{"missing header", join(good[1:]...), 1, trace.ErrNoHeader, `{"mcpkeep_trace":1`},
		{"header not JSON", join(append([]string{"mcpkeep trace v1"}, good[1:]...)...), 1, trace.ErrNoHeader, "not a JSON object"},
		{"wrong version", with(1, strings.Replace(hdr, `"mcpkeep_trace":1`, `"mcpkeep_trace":2`, 1), false), 1, trace.ErrVersion, "unsupported trace version 2 (this mcpkeep reads version 1)"},
		{"header unknown field", with(1, strings.Replace(hdr, `"clock"`, `"clocks"`, 1), false), 1, trace.ErrBadHeader, `unknown field "clocks"`},
		{"header bad policy", with(1, strings.Replace(hdr, `"maxAttempts":3`, `"maxAttempts":0`, 1), false), 1, trace.ErrBadHeader, "maxAttempts"},
		{"header without started", with(1, strings.Replace(hdr, `"started":"2026-01-02T03:04:05Z",`, ``, 1), false), 1, trace.ErrBadHeader, `"started" is missing`},
		{"unknown event", with(3, ev(1000, 1, "crashed", "established", "lost", 0, ""), false), 3, trace.ErrUnknownEvent, `unknown event "crashed"`},
		{"unknown state", with(3, ev(1000, 1, "closed", "established", "gone", 0, ""), false), 3, trace.ErrUnknownState, `unknown state "gone"`},
		{"missing field", with(3, `{"t":1000,"server":"s","gen":1,"event":"closed","from":"established","to":"lost"}`, false), 3, trace.ErrBadEvent, `missing "attempt"`},
		{"not JSON", with(3, `closed at 1000`, false), 3, trace.ErrBadEvent, "not a JSON object"},
		{"second header", with(3, hdr, false), 3, trace.ErrBadEvent, "a second header"},
		{"other server", with(3, strings.Replace(ev(1000, 1, "closed", "established", "lost", 0, ""), `"s"`, `"x"`, 1), false), 3, trace.ErrWrongServer, `"x" in a trace of "s"`},
		{"undeclared event in state", with(3, ev(1000, 1, "retry_due", "established", "connecting", 0, ""), false), 3, trace.ErrIllegal, "retry_due is not declared in state established"},
		{"illegal target", with(3, ev(1000, 1, "closed", "established", "backing-off", 0, ""), false), 3, trace.ErrIllegal, "established --closed--> backing-off is not declared (closed leads to lost)"},
		{"from is not the current state", with(3, ev(1000, 1, "released", "lost", "backing-off", 1, `,"next_retry_ms":500`), false), 3, trace.ErrIllegal, "released from lost, but s is in established"},
		{"time going backwards", with(3, ev(2, 1, "closed", "established", "lost", 0, ""), false), 3, trace.ErrTimeBackwards, "t=2 ms is before t=3 ms"},
		{"negative offset", with(2, ev(-1, 1, "connected", "connecting", "established", 0, ""), false), 2, trace.ErrTimeBackwards, "negative offset"},
		{"event after disposed", join(append(append([]string(nil), good...), ev(90001, 6, "reconnect", "disposed", "connecting", 0, ""))...), 24, trace.ErrAfterDisposed, "after s was disposed"},
		{"gen goes backwards", with(6, ev(1500, 1, "connected", "connecting", "established", 1, ""), false), 6, trace.ErrInvariant, "gen goes backwards from 2 to 1"},
		{"gen skips on retry", with(5, ev(1500, 3, "retry_due", "backing-off", "connecting", 1, ""), false), 5, trace.ErrInvariant, "must start gen 2, got gen 3"},
		{"attempt above max (I4)", with(17, ev(73500, 5, "retry_due", "backing-off", "connecting", 4, ""), false), 17, trace.ErrInvariant, "I4: attempt 4 outside 0..3"},
		{"attempt does not reset on stable", with(8, ev(31500, 2, "stable", "established", "established", 1, ""), false), 8, trace.ErrInvariant, "attempt 1 after stable, want 0"},
		{"attempt skips", with(4, ev(1000, 1, "released", "lost", "backing-off", 2, `,"next_retry_ms":1000`), false), 4, trace.ErrInvariant, "attempt 2 after released, want 1"},
		{"budget spent early", with(13, ev(70500, 3, "released", "lost", "exhausted", 1, `,"detail":{"guard":"reconnect enabled ∧ budget spent"}`), false), 13, trace.ErrInvariant, "budget spent at attempt 1 of 3"},
		{"reconnect disabled under an enabled policy", with(19, ev(73500, 5, "released", "lost", "exhausted", 3, `,"detail":{"guard":"reconnect disabled"}`), false), 19, trace.ErrInvariant, "has reconnect enabled"},
		{"undeclared guard", with(19, ev(73500, 5, "released", "lost", "exhausted", 3, `,"detail":{"guard":"budget left"}`), false), 19, trace.ErrIllegal, `guard "budget left" is not declared`},
		{"retry delay off policy", with(4, ev(1000, 1, "released", "lost", "backing-off", 1, `,"next_retry_ms":700`), false), 4, trace.ErrInvariant, "next_retry_ms 700 for attempt 1, the policy allows 500..500"},
		{"next retry missing", with(4, ev(1000, 1, "released", "lost", "backing-off", 1, ""), false), 4, trace.ErrInvariant, "next_retry_ms 0"},
		{"next retry outside backing-off", with(5, ev(1500, 2, "retry_due", "backing-off", "connecting", 1, `,"next_retry_ms":5`), false), 5, trace.ErrInvariant, "next_retry_ms on a transition to connecting"},
		{"retry fired early", with(5, ev(1499, 2, "retry_due", "backing-off", "connecting", 1, ""), false), 5, trace.ErrEarly, "the retry was due at t=1500 ms"},
		{"stable early", with(8, ev(31499, 2, "stable", "established", "established", 0, ""), false), 8, trace.ErrEarly, "stable at t=31499 ms, before t=1500+30000 ms"},
		{"connect timeout early", with(12, ev(70000, 3, "failed", "connecting", "lost", 1, `,"detail":{"err":"connect timeout after 30s"}`), false), 12, trace.ErrEarly, "connect timeout"},
		{"bad milliseconds", with(2, `{"t":1e3,"server":"s","gen":1,"event":"connected","from":"connecting","to":"established","attempt":0}`, false), 2, trace.ErrBadEvent, "bad milliseconds"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := trace.Check(strings.NewReader(row.trace))
			var le *trace.LineError
			if !errors.As(err, &le) {
				t.Fatalf("Check = %v, want a *LineError", err)
			}
			if le.Line != row.line {
				t.Errorf("line %d, want %d (%v)", le.Line, row.line, err)
			}
			if !errors.Is(err, row.is) {
				t.Errorf("%v is not %v", err, row.is)
			}
			if !strings.Contains(err.Error(), row.msg) {
				t.Errorf("%q does not say %q", err, row.msg)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", row.line)) {
				t.Errorf("%q does not start with the line", err)
			}
		})
	}
}

// TestCheckReconnectDisabled: with reconnect disabled, released leads to
// exhausted under the guard "reconnect disabled", named or inferred.
func TestCheckReconnectDisabled(t *testing.T) {
	h := strings.Replace(hdr, `"enabled":true`, `"enabled":false`, 1)
	for _, detail := range []string{`,"detail":{"guard":"reconnect disabled"}`, ""} {
		tr := join(h,
			ev(3, 1, "connected", "connecting", "established", 0, ""),
			ev(10, 1, "closed", "established", "lost", 0, ""),
			ev(11, 1, "released", "lost", "exhausted", 0, detail),
			ev(20, 2, "reconnect", "exhausted", "connecting", 0, ""),
		)
		if err := trace.Check(strings.NewReader(tr)); err != nil {
			t.Errorf("detail %q: %v", detail, err)
		}
	}
	// The guard "budget spent" contradicts the policy.
	tr := join(h,
		ev(3, 1, "connected", "connecting", "established", 0, ""),
		ev(10, 1, "closed", "established", "lost", 0, ""),
		ev(11, 1, "released", "lost", "backing-off", 1, `,"next_retry_ms":500`),
	)
	if err := trace.Check(strings.NewReader(tr)); !errors.Is(err, trace.ErrInvariant) {
		t.Errorf("budget left under a disabled policy: %v", err)
	}
}

// TestCheckMultiServer: a proxy trace interleaves servers, each with its
// own configuration and machine, and its own clock order.
func TestCheckMultiServer(t *testing.T) {
	h := `{"mcpkeep_trace":1,"started":"2026-01-02T03:04:05Z","clock":"mock","servers":{` +
		`"a":{"policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":3,"jitter":0},"connectTimeoutMs":30000,"terminationWindowMs":10000},` +
		`"b":{"policy":{"enabled":true,"initialDelayMs":100,"maxDelayMs":1000,"maxAttempts":1,"jitter":0.5},"connectTimeoutMs":30000,"terminationWindowMs":10000}}}`
	tr := join(h,
		`{"t":5,"server":"a","gen":1,"event":"connected","from":"connecting","to":"established","attempt":0}`,
		`{"t":7,"server":"b","gen":1,"event":"failed","from":"connecting","to":"lost","attempt":0}`,
		`{"t":6.9,"server":"a","gen":1,"event":"tools_changed","from":"established","to":"established","attempt":0}`,
		`{"t":8,"server":"b","gen":1,"event":"released","from":"lost","to":"backing-off","attempt":1,"next_retry_ms":60}`,
		`{"t":68,"server":"b","gen":2,"event":"retry_due","from":"backing-off","to":"connecting","attempt":1}`,
		`{"t":70,"server":"b","gen":2,"event":"failed","from":"connecting","to":"lost","attempt":1}`,
		`{"t":71,"server":"b","gen":2,"event":"released","from":"lost","to":"exhausted","attempt":1}`,
	)
	s, err := trace.Summarize(strings.NewReader(tr))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Servers) != 2 || s.Servers[0].Final != fsm.Established || s.Servers[1].Final != fsm.Exhausted {
		t.Errorf("summary %+v", s)
	}
	// b's jitter 0.5 allows 50..100 ms for its first retry, not 40.
	bad := strings.Replace(tr, `"next_retry_ms":60`, `"next_retry_ms":40`, 1)
	if err := trace.Check(strings.NewReader(bad)); !errors.Is(err, trace.ErrInvariant) {
		t.Errorf("jittered delay below the bound: %v", err)
	}
}

// TestWriterConcurrent: several supervisors may share one Writer; lines
// never interleave.
func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, header())
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				w.Write(crashRecovered()[0])
			}
		}()
	}
	for range 4 {
		<-done
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	_, evs, err := trace.Read(&buf)
	if err != nil || len(evs) != 400 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

// TestWriterErrorSticks: the first write error is kept and reported.
func TestWriterErrorSticks(t *testing.T) {
	fw := &failWriter{}
	w := trace.NewWriter(fw, header())
	w.Write(crashRecovered()[0])
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Flush = %v", err)
	}
	calls := fw.n
	w.Write(crashRecovered()[1])
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed write returned nil")
	}
	if fw.n != calls {
		t.Errorf("the writer was written to after the error")
	}
}

// A reload that replaces a changed server disposes the old supervisor and
// starts a new one of the same name at gen 1: a new incarnation, checked
// afresh. Anything else after disposed stays illegal.
func TestCheckReloadIncarnation(t *testing.T) {
	reborn := append(append([]string(nil), good...),
		ev(95000, 1, "connected", "connecting", "established", 0, ""),
		ev(96000, 1, "dispose", "established", "draining", 0, ""),
		ev(96000, 1, "drained", "draining", "disposed", 0, ""))
	if err := trace.Check(strings.NewReader(join(reborn...))); err != nil {
		t.Fatalf("a reloaded server's new incarnation: %v", err)
	}
	stale := append(append([]string(nil), good...), ev(95000, 7, "connected", "connecting", "established", 0, ""))
	if err := trace.Check(strings.NewReader(join(stale...))); !errors.Is(err, trace.ErrAfterDisposed) {
		t.Fatalf("gen 7 after disposed: %v, want ErrAfterDisposed", err)
	}
	back := append(append([]string(nil), good...), ev(80000, 1, "connected", "connecting", "established", 0, ""))
	if err := trace.Check(strings.NewReader(join(back...))); !errors.Is(err, trace.ErrTimeBackwards) {
		t.Fatalf("a new incarnation before the old one's disposal: %v, want ErrTimeBackwards", err)
	}
}
