package benchsuite

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The idle row's phases come from the proxy's trace: the demand and the
// connection, as wall-clock times beside the host's own.
func TestReadIdlePhases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	const trace = `{"mcpkeep_trace":1,"started":"2026-12-03T11:35:18.000000000Z","clock":"real","policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":10,"jitter":0,"stabilityWindowMs":30000},"connectTimeoutMs":30000,"terminationWindowMs":5500,"servers":{"s":{"policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":10,"jitter":0,"stabilityWindowMs":30000},"connectTimeoutMs":30000,"terminationWindowMs":5500}},"note":"mcpkeep proxy"}
{"t":100.5,"server":"s","gen":1,"event":"demand","from":"idle","to":"connecting","attempt":0}
{"t":111,"server":"s","gen":1,"event":"connected","from":"connecting","to":"established","attempt":0}
{"t":115,"server":"s","gen":1,"event":"dispose","from":"established","to":"draining","attempt":0}
`
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 12, 3, 11, 35, 18, 0, time.UTC)
	sent, done := started.Add(100*time.Millisecond), started.Add(113*time.Millisecond)
	ph, err := readIdlePhases(path, sent, done)
	if err != nil {
		t.Fatal(err)
	}
	if ph.demand != 500*time.Microsecond || ph.connect != 10500*time.Microsecond || ph.answer != 2*time.Millisecond {
		t.Errorf("phases %+v; want 500µs, 10.5ms, 2ms", ph)
	}
	if ph.demand+ph.connect+ph.answer != done.Sub(sent) {
		t.Errorf("phases %+v do not add up to the call's %v", ph, done.Sub(sent))
	}

	// A trace without a demand start is an error, not zero phases.
	if err := os.WriteFile(path, []byte(firstLine(trace)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readIdlePhases(path, sent, done); err == nil {
		t.Error("a trace with no demand start gave phases")
	}
}

func firstLine(s string) string {
	for i := range s {
		if s[i] == '\n' {
			return s[:i+1]
		}
	}
	return s
}

// The lazy relay starts the fixture at the host's first bytes and carries
// a connect and a call.
func TestLazyRelayCall(t *testing.T) {
	ctx, cancel := within(t.Context())
	defer cancel()
	d, err := lazyRelayCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Errorf("lazy relay call took %v", d)
	}
}
