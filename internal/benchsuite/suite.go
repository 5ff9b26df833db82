package benchsuite

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Config sizes the suite. Default is what `make bench` runs.
type Config struct {
	// Crashes is the number of crash cycles per server in sections 1 and 2
	// (and of CommandTransport detections of the plain server).
	Crashes int
	// SDKGrandchildSamples CommandTransport detections of the grandchild
	// server run concurrently, each capped at SDKGrandchildCap.
	SDKGrandchildSamples int
	SDKGrandchildCap     time.Duration
	// MemCycles and ProcCycles are the soak's in-memory and real-process
	// crash/recover cycles.
	MemCycles, ProcCycles int
	// Supervisors is the fleet size of section 5; ScaleDelay its initial
	// retry delay.
	Supervisors int
	ScaleDelay  time.Duration
	// Rounds of each micro-benchmark pair, alternating; BenchTime each.
	Rounds    int
	BenchTime time.Duration
	// ProxyCalls echo calls per path in section 7; RelayCalls calls per
	// path of each relay in section 8.
	ProxyCalls, RelayCalls int
	// StatelessHosts call at once through the stateless front (section
	// 7); 0 is 100.
	StatelessHosts int
	// StartupServers is the proxy's fleet in section 9, StartupRuns the
	// number of its cold starts (each beside a direct one).
	StartupServers, StartupRuns int
	// DemoFreshCache runs section 10's `go run ./cmd/mcpkeep demo` on a
	// fresh module cache (downloads every module); false: warm only.
	DemoFreshCache bool
	// ProfileDir, when set, receives a CPU profile of the proxy under
	// load (section 7) and its `go tool pprof -top`.
	ProfileDir string
	// Only, when not empty, runs these sections only (see Sections).
	Only []string
	// Progress receives one line per step; nil is silent.
	Progress io.Writer
}

// Sections are the keys Config.Only accepts (a section's number works
// too): detection and recovery run together; "stateless" is the
// stateless front's rows of section 7 alone ("proxy" includes them); "idle" is
// the idle first call's rows of section 9 alone ("startup" includes them).
var Sections = []string{"detection", "recovery", "call", "soak", "scale", "fsm", "proxy", "relay", "startup", "binary", "stateless", "idle"}

// wants reports whether section key runs.
func (c Config) wants(key string) bool {
	if len(c.Only) == 0 {
		return true
	}
	for i, k := range Sections {
		if k == key {
			for _, o := range c.Only {
				if o == k || o == fmt.Sprint(i+1) {
					return true
				}
			}
		}
	}
	return false
}

// CheckOnly rejects section names Config.Only does not know.
func CheckOnly(only []string) error {
	for _, o := range only {
		ok := false
		for i, k := range Sections {
			ok = ok || o == k || o == fmt.Sprint(i+1)
		}
		if !ok {
			return fmt.Errorf("unknown section %q (want one of %v, or its number)", o, Sections)
		}
	}
	return nil
}

// Default is the full suite.
func Default() Config {
	return Config{
		Crashes:              200,
		SDKGrandchildSamples: 10,
		SDKGrandchildCap:     2 * time.Second,
		MemCycles:            10_000,
		ProcCycles:           300,
		Supervisors:          1000,
		ScaleDelay:           time.Second,
		Rounds:               10,
		BenchTime:            time.Second,
		ProxyCalls:           1500,
		RelayCalls:           200,
		StartupServers:       50,
		StartupRuns:          7,
		DemoFreshCache:       true,
	}
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
}

// Section names, in table order.
const (
	secDetect   = "1 detection"
	secRecovery = "2 recovery"
	secCall     = "3 call overhead"
	secSoak     = "4 soak"
	secScale    = "5 scale"
	secFSM      = "6 fsm step"
	secProxy    = "7 proxy hop"
	secRelay    = "8 relay"
	secStartup  = "9 startup"
	secBinary   = "10 binary"
)

// Run runs every section and returns the report. It needs the fixture
// re-exec: the program's main must call fixture.RunIfChild first.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	t0, cpu0 := time.Now(), readCPUTimes()
	rep := &Report{Machine: DescribeMachine()}
	if f := flag.Lookup("test.benchtime"); f != nil && cfg.BenchTime > 0 {
		if err := f.Value.Set(cfg.BenchTime.String()); err != nil {
			return nil, err
		}
	}

	// The micro-benchmarks first, on a quiet process.
	var (
		fr  fsmResult
		cr  []callResult
		sr  *stdioResult
		ms  *memSoakResult
		ps  *procSoakResult
		sc  *scaleResult
		hr  *hopResult
		th  *traceHopResult
		rr  *relayResult
		st  *startupResult
		ic  *idleCallResult
		ss  *sessionsResult
		sh  *sharingResult
		sl  *statelessResult
		br  *binaryResult
		rp  *replicasResult // replicas.go
		err error
	)
	if cfg.wants("fsm") {
		cfg.progress("section 6: FSM step cost")
		if fr, err = runFSM(cfg); err != nil {
			return nil, fmt.Errorf("fsm: %w", err)
		}
	}
	if cfg.wants("call") {
		cfg.progress("section 3: call overhead")
		if cr, err = runCalls(ctx, cfg); err != nil {
			return nil, fmt.Errorf("call overhead: %w", err)
		}
	}
	runtime.GC()
	if cfg.wants("detection") || cfg.wants("recovery") {
		cfg.progress("sections 1 and 2: detection and recovery (real processes)")
		if sr, err = runStdio(ctx, cfg); err != nil {
			return nil, fmt.Errorf("detection/recovery: %w", err)
		}
	}
	if cfg.wants("soak") {
		cfg.progress("section 4: soak")
		if ms, err = runMemSoak(ctx, cfg); err != nil {
			return nil, fmt.Errorf("in-memory soak: %w", err)
		}
		if ps, err = runProcSoak(ctx, cfg); err != nil {
			return nil, fmt.Errorf("process soak: %w", err)
		}
	}
	if cfg.wants("scale") {
		cfg.progress("section 5: scale")
		if sc, err = runScale(ctx, cfg); err != nil {
			return nil, fmt.Errorf("scale: %w", err)
		}
	}
	if cfg.wants("proxy") || cfg.wants("relay") || cfg.wants("startup") || cfg.wants("stateless") || cfg.wants("idle") {
		dir, err := os.MkdirTemp("", "mcpkeep-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.progress("sections 7 to 9: building ./cmd/mcpkeep for the proxy rows")
		b, err := buildProxy(ctx, dir)
		if err != nil {
			return nil, err
		}
		if cfg.wants("proxy") || cfg.wants("relay") {
			cfg.progress("sections 7 and 8: proxy hop and relays")
			if hr, rr, err = runProxyHop(ctx, cfg, b, cfg.wants("relay")); err != nil {
				return nil, fmt.Errorf("proxy hop: %w", err)
			}
		}
		if cfg.wants("proxy") {
			cfg.progress("section 7: the hop with tracing off and on (docs/design.md §27)")
			if th, err = runTraceHop(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("tracing hop: %w", err)
			}
			cfg.progress("section 7: host sessions of one --listen proxy")
			if ss, err = runSessions(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("host sessions: %w", err)
			}
			cfg.progress("section 7: what sharing saves (%d host sessions × %d servers)", shareSessions, shareServers)
			if sh, err = runSharing(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("sharing: %w", err)
			}
		}
		if cfg.wants("proxy") || cfg.wants("stateless") {
			cfg.progress("section 7: the 2026-07-28 stateless front over HTTP, one host and %d at once", cfg.statelessHosts())
			if sl, err = runStateless(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("stateless front: %w", err)
			}
		}
		if cfg.wants("proxy") {
			cfg.progress("section 7: calls/s through 1 and 3 replicas")
			if rp, err = runReplicasBench(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("replicas: %w", err)
			}
		}
		if cfg.wants("startup") {
			cfg.progress("section 9: startup of %d servers", cfg.StartupServers)
			if st, err = runStartup(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("startup: %w", err)
			}
		}
		if cfg.wants("startup") || cfg.wants("idle") {
			cfg.progress("section 9: the first call to an idle server")
			if ic, err = runIdleCall(ctx, cfg, b); err != nil {
				return nil, fmt.Errorf("idle first call: %w", err)
			}
		}
	}
	if cfg.wants("binary") {
		cfg.progress("section 10: binary size and go run demo")
		if br, err = runBinary(ctx, cfg); err != nil {
			return nil, fmt.Errorf("binary: %w", err)
		}
	}

	if sr != nil {
		if cfg.wants("detection") {
			detectionRows(rep, sr)
		}
		if cfg.wants("recovery") {
			recoveryRows(rep, sr)
		}
	}
	if cr != nil {
		callRows(rep, cr, cfg)
	}
	if ms != nil {
		soakRows(rep, ms, ps)
	}
	if sc != nil {
		scaleRows(rep, sc)
	}
	if cfg.wants("fsm") {
		fsmRows(rep, fr, cfg)
	}
	if hr != nil && cfg.wants("proxy") {
		proxyRows(rep, hr, cfg)
	}
	if th != nil {
		traceRows(rep, th)
	}
	if ss != nil {
		sessionRows(rep, ss)
		if sh != nil {
			sharingRows(rep, sh)
		}
	}
	if sl != nil {
		statelessRows(rep, sl)
	}
	if rp != nil {
		replicaRows(rep, rp)
	}
	if rr != nil {
		relayRows(rep, rr, cfg)
	}
	if st != nil {
		startupRows(rep, st)
	}
	if ic != nil {
		idleCallRows(rep, ic)
	}
	if br != nil {
		binaryRows(rep, br)
	}
	rep.Wall, rep.Steal = time.Since(t0), stealBetween(cpu0, readCPUTimes())
	return rep, nil
}
