package backoff_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// R13: Resolve rejects each invalid bound, naming the field.
func TestResolveRejectsEachInvalidBound(t *testing.T) {
	with := func(f func(*backoff.Policy)) backoff.Policy {
		p := backoff.Default()
		f(&p)
		return p
	}
	tests := []struct {
		name  string
		p     backoff.Policy
		field string
		value any
		rule  string
	}{
		{"initialDelay zero", with(func(p *backoff.Policy) { p.InitialDelay = 0 }), "initialDelay", time.Duration(0), "must be > 0"},
		{"initialDelay negative", with(func(p *backoff.Policy) { p.InitialDelay = -time.Second }), "initialDelay", -time.Second, "must be > 0"},
		{"maxDelay zero", with(func(p *backoff.Policy) { p.MaxDelay = 0 }), "maxDelay", time.Duration(0), "must be > 0"},
		{"maxDelay negative", with(func(p *backoff.Policy) { p.MaxDelay = -time.Second }), "maxDelay", -time.Second, "must be > 0"},
		{"maxDelay below initialDelay", with(func(p *backoff.Policy) { p.MaxDelay = 499 * time.Millisecond }), "maxDelay", 499 * time.Millisecond, "must be >= initialDelay (500ms)"},
		{"maxDelay just above 24h", with(func(p *backoff.Policy) { p.MaxDelay = 24*time.Hour + 1 }), "maxDelay", 24*time.Hour + 1, "must be <= 24h0m0s"},
		{"maxDelay huge", with(func(p *backoff.Policy) { p.MaxDelay = math.MaxInt64 }), "maxDelay", time.Duration(math.MaxInt64), "must be <= 24h0m0s"},
		{"maxAttempts zero", with(func(p *backoff.Policy) { p.MaxAttempts = 0 }), "maxAttempts", 0, "must be >= 1"},
		{"maxAttempts negative", with(func(p *backoff.Policy) { p.MaxAttempts = -1 }), "maxAttempts", -1, "must be >= 1"},
		{"maxAttempts 1e6+1", with(func(p *backoff.Policy) { p.MaxAttempts = 1_000_001 }), "maxAttempts", 1_000_001, "must be <= 1000000"},
		{"maxAttempts MaxInt", with(func(p *backoff.Policy) { p.MaxAttempts = math.MaxInt }), "maxAttempts", math.MaxInt, "must be <= 1000000"},
		{"jitter negative", with(func(p *backoff.Policy) { p.Jitter = -0.1 }), "jitter", -0.1, "must be >= 0"},
		{"jitter above 1", with(func(p *backoff.Policy) { p.Jitter = 1.1 }), "jitter", 1.1, "must be <= 1"},
		{"jitter NaN", with(func(p *backoff.Policy) { p.Jitter = math.NaN() }), "jitter", math.NaN(), "must be a number in [0, 1]"},
		{"jitter +Inf", with(func(p *backoff.Policy) { p.Jitter = math.Inf(1) }), "jitter", math.Inf(1), "must be <= 1"},
		{"jitter -Inf", with(func(p *backoff.Policy) { p.Jitter = math.Inf(-1) }), "jitter", math.Inf(-1), "must be >= 0"},
		// Bounds hold even when reconnect is off: the typo must not wait
		// until someone turns it on.
		{"disabled still checked", with(func(p *backoff.Policy) { p.Enabled = false; p.MaxAttempts = 0 }), "maxAttempts", 0, "must be >= 1"},
		// The first violation in documented order wins.
		{"several bad: initialDelay first", backoff.Policy{InitialDelay: -1, MaxDelay: -1, MaxAttempts: -1, Jitter: 2}, "initialDelay", time.Duration(-1), "must be > 0"},
		{"several bad: maxDelay before maxAttempts", with(func(p *backoff.Policy) { p.MaxDelay = time.Millisecond; p.MaxAttempts = 0 }), "maxDelay", time.Millisecond, "must be >= initialDelay (500ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.Resolve()
			if err == nil {
				t.Fatalf("Resolve(%+v) = nil error, want one naming %s", tt.p, tt.field)
			}
			if !errors.Is(err, backoff.ErrInvalidPolicy) {
				t.Errorf("errors.Is(%v, ErrInvalidPolicy) = false", err)
			}
			var fe *backoff.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("errors.As(%v, *FieldError) = false", err)
			}
			if fe.Field != tt.field {
				t.Errorf("Field = %q, want %q", fe.Field, tt.field)
			}
			if diff := cmp.Diff(tt.value, fe.Value, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Value mismatch (-want +got):\n%s", diff)
			}
			if fe.Rule != tt.rule {
				t.Errorf("Rule = %q, want %q", fe.Rule, tt.rule)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "backoff: "+tt.field+" ") || !strings.HasSuffix(msg, fe.Rule) {
				t.Errorf("message %q does not read `backoff: %s <value>: <rule>`", msg, tt.field)
			}
			if diff := cmp.Diff(backoff.Policy{}, got); diff != "" {
				t.Errorf("rejected policy returned non-zero (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveMessage(t *testing.T) {
	p := backoff.Default()
	p.MaxDelay = 100 * time.Millisecond
	_, err := p.Resolve()
	const want = "backoff: maxDelay 100ms: must be >= initialDelay (500ms)"
	if err == nil || err.Error() != want {
		t.Fatalf("Resolve error = %v, want %q", err, want)
	}
}

func TestResolveAcceptsEdges(t *testing.T) {
	base := backoff.Default()
	tests := []struct {
		name string
		p    backoff.Policy
	}{
		{"default", backoff.Default()},
		{"default HTTP", backoff.DefaultHTTP()},
		{"1ns initial", backoff.Policy{Enabled: true, InitialDelay: 1, MaxDelay: base.MaxDelay, MaxAttempts: 10}},
		{"1ns initial and max", backoff.Policy{Enabled: true, InitialDelay: 1, MaxDelay: 1, MaxAttempts: 10}},
		{"maxDelay == initialDelay", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 10}},
		{"maxDelay 24h", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: 10}},
		{"initial and max 24h", backoff.Policy{Enabled: true, InitialDelay: backoff.MaxMaxDelay, MaxDelay: backoff.MaxMaxDelay, MaxAttempts: 10}},
		{"attempts 1", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: 1}},
		{"attempts 1e6", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: backoff.MaxMaxAttempts}},
		{"jitter 0", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Jitter: 0}},
		{"jitter 1", backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Jitter: 1}},
		{"disabled", backoff.Policy{Enabled: false, InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.Resolve()
			if err != nil {
				t.Fatalf("Resolve(%+v) = %v, want nil", tt.p, err)
			}
			if diff := cmp.Diff(tt.p, got); diff != "" {
				t.Errorf("Resolve changed the policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	want := backoff.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 10, Jitter: 0}
	if diff := cmp.Diff(want, backoff.Default()); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	want.Jitter = 0.5
	if diff := cmp.Diff(want, backoff.DefaultHTTP()); diff != "" {
		t.Errorf("DefaultHTTP() mismatch (-want +got):\n%s", diff)
	}
	if got := backoff.Default().StabilityWindow(); got != 30*time.Second {
		t.Errorf("StabilityWindow() = %v, want maxDelay 30s", got)
	}
}

// The stability window (docs/design.md §5): derived from maxDelay with a
// floor, or set, never shorter than maxDelay.
func TestStabilityWindow(t *testing.T) {
	for _, c := range []struct {
		p    backoff.Policy
		want time.Duration
	}{
		{backoff.Policy{MaxDelay: time.Second}, backoff.MinStability},
		{backoff.Policy{MaxDelay: time.Minute}, time.Minute},
		{backoff.Policy{MaxDelay: time.Second, Stability: 2 * time.Second}, 2 * time.Second},
	} {
		if got := c.p.StabilityWindow(); got != c.want {
			t.Errorf("%+v: window %v, want %v", c.p, got, c.want)
		}
	}
	ok := backoff.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 2 * time.Second, MaxAttempts: 1}
	for _, c := range []struct {
		stability time.Duration
		rule      string
	}{
		{-time.Second, "must be > 0"},
		{time.Second, "must be >= maxDelay (2s)"},
		{25 * time.Hour, "must be <= 24h0m0s"},
	} {
		p := ok
		p.Stability = c.stability
		_, err := p.Resolve()
		var fe *backoff.FieldError
		if !errors.As(err, &fe) || fe.Field != "stabilityWindow" || !strings.Contains(fe.Rule, c.rule) {
			t.Errorf("stability %v: %v, want stabilityWindow: %s", c.stability, err, c.rule)
		}
	}
	ok.Stability = 2 * time.Second
	if _, err := ok.Resolve(); err != nil {
		t.Errorf("stability = maxDelay: %v", err)
	}
}
