package benchsuite

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	// Progress receives one line per step; nil is silent.
	Progress io.Writer
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
)

// Run runs every section and returns the report. It needs the fixture
// re-exec: the program's main must call fixture.RunIfChild first.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	t0 := time.Now()
	rep := &Report{Machine: DescribeMachine()}
	if f := flag.Lookup("test.benchtime"); f != nil && cfg.BenchTime > 0 {
		if err := f.Value.Set(cfg.BenchTime.String()); err != nil {
			return nil, err
		}
	}

	// The micro-benchmarks first, on a quiet process.
	cfg.progress("section 6: FSM step cost")
	fr, err := runFSM(cfg)
	if err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	cfg.progress("section 3: call overhead")
	cr, err := runCalls(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("call overhead: %w", err)
	}
	runtime.GC()
	cfg.progress("sections 1 and 2: detection and recovery (real processes)")
	sr, err := runStdio(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("detection/recovery: %w", err)
	}
	cfg.progress("section 4: soak")
	ms, err := runMemSoak(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("in-memory soak: %w", err)
	}
	ps, err := runProcSoak(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("process soak: %w", err)
	}
	cfg.progress("section 5: scale")
	sc, err := runScale(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}

	detectionRows(rep, sr)
	recoveryRows(rep, sr)
	callRows(rep, cr, cfg)
	soakRows(rep, ms, ps)
	scaleRows(rep, sc)
	fsmRows(rep, fr, cfg)
	rep.Wall = time.Since(t0)
	return rep, nil
}
