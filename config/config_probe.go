package config

import (
	"fmt"
	"time"
)

// Probe is the health probe of an HTTP server whose session no event
// stream watches (docs/design.md §8, §11): "probeIntervalMs",
// "probeTimeoutMs", "probeFailures". A zero field is the transport's
// default (transport.DefaultProbeInterval: 15 s, or 1 s for a loopback
// URL; DefaultProbeTimeout 5 s; DefaultProbeFailures 2).
type Probe struct {
	Interval time.Duration
	Timeout  time.Duration
	Failures int
}

// Bounds of the probe keys. An interval under 100 ms would flood a
// server, one over an hour is no health probe; a timeout must leave room
// for one round trip and not outlast a connect timeout by much.
const (
	minProbeInterval = 100 * time.Millisecond
	maxProbeInterval = time.Hour
	minProbeTimeout  = 100 * time.Millisecond
	maxProbeTimeout  = 5 * time.Minute
	maxProbeFailures = 100
)

// probeFields are the probe keys of a server block, each with where it
// was set.
type probeFields struct {
	interval, timeout setting[time.Duration]
	failures          setting[int]
}

// probeKeys lists the probe keys, for serverKeys' message.
const probeKeys = "probeIntervalMs, probeTimeoutMs, probeFailures"

// field decodes f when it is a probe key; ok is false for any other key.
func (pf *probeFields) field(f member) (ok bool, err error) {
	switch f.key {
	case "probeIntervalMs":
		pf.interval.v, err = decodeMs(f, false)
		pf.interval.path = f.path
	case "probeTimeoutMs":
		pf.timeout.v, err = decodeMs(f, false)
		pf.timeout.path = f.path
	case "probeFailures":
		var n int64
		n, err = decodeInt(f, 1, maxProbeFailures)
		pf.failures = setting[int]{int(n), f.path}
	default:
		return false, nil
	}
	return true, err
}

// resolve checks the probe keys of a server with transport tr and
// returns its Probe. Errors name the field.
func (pf probeFields) resolve(tr string) (Probe, []error) {
	var errs []error
	if tr != TransportHTTP {
		for _, p := range []jsonPath{pf.interval.path, pf.timeout.path, pf.failures.path} {
			if p != "" {
				errs = append(errs, ruleError(p, "only for url servers (a stdio server's end is seen by its process)"))
			}
		}
		return Probe{}, errs
	}
	pr := Probe{Interval: pf.interval.v, Timeout: pf.timeout.v, Failures: pf.failures.v}
	if err := pr.Resolve(); err != nil {
		if fe, ok := err.(*ProbeFieldError); ok {
			path := map[string]jsonPath{"probeIntervalMs": pf.interval.path, "probeTimeoutMs": pf.timeout.path,
				"probeFailures": pf.failures.path}[fe.Field]
			errs = append(errs, ruleError(path, "%s", fe.Rule))
		}
	}
	return pr, errs
}

// ProbeFieldError names the probe key at fault and the rule it breaks.
type ProbeFieldError struct {
	Field string // the config key: "probeIntervalMs", ...
	Rule  string
}

func (e *ProbeFieldError) Error() string { return e.Field + ": " + e.Rule }

// Resolve checks p against the bounds of its keys; zero fields (the
// defaults) pass. The error is a *ProbeFieldError.
func (p Probe) Resolve() error {
	between := func(field string, d, lo, hi time.Duration) error {
		if d != 0 && (d < lo || d > hi) {
			return &ProbeFieldError{Field: field, Rule: fmt.Sprintf("must be between %d and %d (%v to %v), got %d",
				lo.Milliseconds(), hi.Milliseconds(), lo, hi, d.Milliseconds())}
		}
		return nil
	}
	if err := between("probeIntervalMs", p.Interval, minProbeInterval, maxProbeInterval); err != nil {
		return err
	}
	if err := between("probeTimeoutMs", p.Timeout, minProbeTimeout, maxProbeTimeout); err != nil {
		return err
	}
	if p.Failures < 0 || p.Failures > maxProbeFailures {
		return &ProbeFieldError{Field: "probeFailures", Rule: fmt.Sprintf("must be between 1 and %d, got %d", maxProbeFailures, p.Failures)}
	}
	return nil
}
