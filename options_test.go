package mcpkeep

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// R13: Resolve rejects each invalid bound, at New, with an error that
// names the field (also for values built in Go rather than read from JSON).
func TestR13NewRejectsEachInvalidBound(t *testing.T) {
	ok := backoff.Default()
	with := func(f func(*backoff.Policy)) backoff.Policy { p := ok; f(&p); return p }
	rows := []struct {
		name  string
		opts  Options
		field string
	}{
		{"initialDelay zero", Options{Policy: with(func(p *backoff.Policy) { p.InitialDelay = 0 })}, "initialDelay"},
		{"initialDelay negative", Options{Policy: with(func(p *backoff.Policy) { p.InitialDelay = -time.Second })}, "initialDelay"},
		{"maxDelay below initialDelay", Options{Policy: with(func(p *backoff.Policy) { p.MaxDelay = 100 * time.Millisecond })}, "maxDelay"},
		{"maxDelay huge", Options{Policy: with(func(p *backoff.Policy) { p.MaxDelay = math.MaxInt64 })}, "maxDelay"},
		{"maxDelay negative", Options{Policy: with(func(p *backoff.Policy) { p.MaxDelay = -1 })}, "maxDelay"},
		{"maxAttempts zero", Options{Policy: with(func(p *backoff.Policy) { p.MaxAttempts = 0 })}, "maxAttempts"},
		{"maxAttempts negative", Options{Policy: with(func(p *backoff.Policy) { p.MaxAttempts = -3 })}, "maxAttempts"},
		{"maxAttempts huge", Options{Policy: with(func(p *backoff.Policy) { p.MaxAttempts = 1_000_001 })}, "maxAttempts"},
		{"jitter negative", Options{Policy: with(func(p *backoff.Policy) { p.Jitter = -0.1 })}, "jitter"},
		{"jitter above one", Options{Policy: with(func(p *backoff.Policy) { p.Jitter = 1.5 })}, "jitter"},
		{"jitter NaN", Options{Policy: with(func(p *backoff.Policy) { p.Jitter = math.NaN() })}, "jitter"},
		{"connectTimeout negative", Options{ConnectTimeout: -time.Second}, "connectTimeout"},
		{"terminationWindow negative", Options{TerminationWindow: -time.Second}, "terminationWindow"},
		{"name empty", Options{Name: "-"}, "name"},
		{"name with a dot", Options{Name: "my.server"}, "name"},
		{"opener missing", Options{Opener: nilOpener}, "opener"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			o := r.opts
			if o.Name == "" {
				o.Name = "srv"
			} else if o.Name == "-" {
				o.Name = ""
			}
			if o.Opener == nil {
				o.Opener = transport.NewMemory()
			} else if o.Opener == nilOpener {
				o.Opener = nil
			}
			_, err := New(o)
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("New = %v, want ErrInvalidOptions", err)
			}
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("not an *OptionError: %T", err)
			}
			if !strings.Contains(err.Error(), r.field) {
				t.Fatalf("error %q does not name %s", err, r.field)
			}
			if strings.HasPrefix(r.name, "initialDelay") || strings.HasPrefix(r.name, "max") || strings.HasPrefix(r.name, "jitter") {
				var fe *backoff.FieldError
				if !errors.As(err, &fe) || fe.Field != r.field || !errors.Is(err, backoff.ErrInvalidPolicy) {
					t.Fatalf("policy error not a backoff.FieldError for %s: %v", r.field, err)
				}
			}
		})
	}
}

// nilOpener marks a row that wants Opener unset.
var nilOpener = &transport.Memory{}

func TestNewDefaults(t *testing.T) {
	s, err := New(Options{Name: "srv", Opener: transport.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Policy() != backoff.Default() {
		t.Fatalf("zero policy should take the default, got %+v", s.Policy())
	}
	if s.opts.ConnectTimeout != config.DefaultConnectTimeout || s.opts.TerminationWindow != DefaultTerminationWindow {
		t.Fatalf("defaults: %v %v", s.opts.ConnectTimeout, s.opts.TerminationWindow)
	}
	if st := s.State(); st.Started || st.MaxAttempts != 10 {
		t.Fatalf("fresh snapshot: %+v", st)
	}
}

// TestServerOptions: a configured server's supervisor options.
func TestServerOptions(t *testing.T) {
	cfg, _, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"srv","args":["-v"],"env":{"K":"${V}"},"cwd":"/tmp",
	  "reconnect":{"maxAttempts":3},"connectTimeoutMs":1234,"failOnStartupError":true}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ServerOptions(cfg.Servers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := opts.Opener.(*transport.Stdio)
	if !ok {
		t.Fatalf("opener %T", opts.Opener)
	}
	if st.Command != "srv" || st.Args[0] != "-v" || st.Env["K"] != "${V}" || st.Dir != "/tmp" || st.Server != "a" {
		t.Errorf("stdio %+v", st)
	}
	if opts.Name != "a" || opts.Policy.MaxAttempts != 3 || opts.ConnectTimeout != 1234*time.Millisecond || !opts.FailOnStartupError {
		t.Errorf("options %+v", opts)
	}
	if _, err := New(opts); err != nil {
		t.Errorf("New: %v", err)
	}
}

// TestOptionsServerNameRule: New refuses a name that tools.CheckServerName
// refuses, naming the field and the rule (docs/design.md §7, R29).
func TestOptionsServerNameRule(t *testing.T) {
	for _, name := range []string{"a__b", "a_", "", strings.Repeat("a", 33), "a.b"} {
		_, err := New(Options{Name: name, Opener: transport.NewMemory()})
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != "name" || !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, tools.ErrInvalidName) {
			t.Errorf("%q: New = %v, want an *OptionError for name", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "mcpkeep: name: "+tools.ServerNameRule) || !strings.Contains(msg, strconv.Quote(name)) {
			t.Errorf("%q: error %q does not state the rule and the name", name, msg)
		}
	}
	for _, name := range []string{"a_b", "a-b", "A1", strings.Repeat("a", 32)} {
		if _, err := New(Options{Name: name, Opener: transport.NewMemory()}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}
