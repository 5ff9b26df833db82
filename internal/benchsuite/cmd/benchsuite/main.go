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
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

func main() {
	fixture.RunIfChild()
	testing.Init() // testing.Benchmark reads -test.benchtime
	out := flag.String("o", "docs/benchmarks.md", "write the report here (Markdown); empty: stdout only")
	quick := flag.Bool("quick", false, "a small run to try the suite out (figures not meaningful; writes no file unless -o is given)")
	strict := flag.Bool("strict", false, "exit 1 when a target is missed")
	flag.Parse()

	cfg := benchsuite.Default()
	if *quick {
		explicit := false
		flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "o" })
		if !explicit {
			*out = ""
		}
		cfg.Crashes, cfg.SDKGrandchildSamples, cfg.SDKGrandchildCap = 20, 2, 500*time.Millisecond
		cfg.MemCycles, cfg.ProcCycles, cfg.Supervisors = 500, 20, 100
		cfg.Rounds, cfg.BenchTime = 1, 100*time.Millisecond
	}
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
