// Command benchsuite runs mcpkeep's benchmark suite (issue 9) and writes
// docs/benchmarks.md: `make bench`. It re-executes itself as the fixture
// MCP server, so fixture.RunIfChild comes first.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite"
	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

func main() {
	probe.Start() // a fixture the suite wants to look into (section 7)
	fixture.RunIfChild()
	testing.Init() // testing.Benchmark reads -test.benchtime
	out := flag.String("o", "docs/benchmarks.md", "write the report here (Markdown); empty: stdout only")
	quick := flag.Bool("quick", false, "a small run to try the suite out (figures not meaningful; writes no file unless -o is given)")
	strict := flag.Bool("strict", false, "exit 1 when a target is missed")
	only := flag.String("only", "", "run these sections only, comma-separated names or numbers: "+strings.Join(benchsuite.Sections, ", "))
	profile := flag.String("profile", "", "write a CPU profile of the proxy under load (section 7) and its pprof -top to this directory")
	flag.Parse()

	cfg := benchsuite.Default()
	if *quick {
		if !explicitFlag("o") {
			*out = ""
		}
		cfg.Crashes, cfg.SDKGrandchildSamples, cfg.SDKGrandchildCap = 20, 2, 500*time.Millisecond
		cfg.MemCycles, cfg.ProcCycles, cfg.Supervisors = 500, 20, 100
		cfg.Rounds, cfg.BenchTime = 1, 100*time.Millisecond
		cfg.ProxyCalls, cfg.RelayCalls, cfg.StartupServers, cfg.StartupRuns = 200, 30, 10, 1
		cfg.StatelessHosts = 10
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
		if err := benchsuite.CheckOnly(cfg.Only); err != nil {
			fmt.Fprintln(os.Stderr, "benchsuite:", err)
			os.Exit(2)
		}
		if !explicitFlag("o") {
			*out = "" // a partial run never overwrites the full report
		}
	}
	cfg.ProfileDir = *profile
	cfg.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := benchsuite.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsuite:", err)
		os.Exit(1)
	}
	rep.WriteText(os.Stdout)
	if *out != "" {
		var b bytes.Buffer
		rep.WriteMarkdown(&b)
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchsuite:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", *out)
	}
	if *strict && len(rep.Missed()) > 0 {
		os.Exit(1)
	}
}

// explicitFlag reports whether the flag name was given.
func explicitFlag(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
