package trace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpkeep/mcpkeep/trace"
)

// FuzzRead: any bytes read as a trace give events or a *LineError, never a
// panic; Check agrees with Read on what parses; and a trace that reads
// writes back (Writer) to one that reads the same.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("../testdata/traces/*.jsonl")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, header())
	for _, e := range crashRecovered() {
		w.Write(e)
	}
	_ = w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte(`{"mcpkeep_trace":1,"servers":{"a":{"policy":{"enabled":true,"initialDelayMs":1,"maxDelayMs":2,"maxAttempts":1,"jitter":0},"connectTimeoutMs":1,"terminationWindowMs":1}},"started":"2026-01-02T03:04:05Z"}` + "\n" +
		`{"t":0.000001,"server":"a","gen":1,"event":"connected","from":"connecting","to":"established","attempt":0}`))
	f.Add([]byte(`{"mcpkeep_trace":2}`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, evs, err := trace.Read(bytes.NewReader(data))
		cerr := trace.Check(bytes.NewReader(data))
		if err != nil {
			if cerr == nil {
				t.Fatalf("Check accepts what Read refuses: %v", err)
			}
			var le *trace.LineError
			if !asLineError(err, &le) || le.Line < 1 {
				t.Fatalf("Read error %v (%T) is not a *LineError with a line", err, err)
			}
			return
		}
		var out bytes.Buffer
		w := trace.NewWriter(&out, h)
		for _, e := range evs {
			w.Write(e)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		h2, evs2, err := trace.Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("a trace that read does not read back once written: %v\n%s", err, out.Bytes())
		}
		opts := cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}
		if diff := cmp.Diff(h, h2, opts); diff != "" {
			t.Fatalf("header changed by a round trip (-read +reread):\n%s", diff)
		}
		if diff := cmp.Diff(evs, evs2, opts); diff != "" {
			t.Fatalf("events changed by a round trip (-read +reread):\n%s", diff)
		}
		if err2 := trace.Check(bytes.NewReader(out.Bytes())); (cerr == nil) != (err2 == nil) {
			t.Fatalf("Check before and after a round trip: %v / %v", cerr, err2)
		}
	})
}

func asLineError(err error, le **trace.LineError) bool {
	e, ok := err.(*trace.LineError)
	*le = e
	return ok
}
