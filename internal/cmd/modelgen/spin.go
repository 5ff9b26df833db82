package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrCounterexample: SPIN found a run that breaks a property.
var ErrCounterexample = errors.New("SPIN found a counterexample")

// ErrIncomplete: the search was cut short (memory, depth): it proves nothing.
var ErrIncomplete = errors.New("the SPIN search did not complete")

// ErrNoSpin: spin or a C compiler is not on PATH.
var ErrNoSpin = errors.New("spin and a C compiler (gcc) must be on PATH: apt-get install spin gcc")

// property is one SPIN run: the safety search (assertions, the invariants,
// invalid end states) or one LTL claim under weak fairness.
type property struct {
	name string // "safety", or the ltl claim's name in the model
	live bool
	// defs are cpp definitions for spin (the model's bounds).
	defs []string
}

// liveBounds: the liveness claims run with one fault instead of two. A
// fair search stores the states once per process it is fair to, and
// make model must finish within minutes on 2 cores.
var liveBounds = []string{"-DLIVE", "-DMAXFAULT=1"}

var lifecycleProperties = []property{
	{name: "safety"},
	{name: "demand", live: true, defs: liveBounds},
	{name: "settles", live: true, defs: liveBounds},
}

// taskProperties: the task model is small enough for its full bounds
// under fairness too.
var taskProperties = []property{
	{name: "safety"},
	{name: "ends", live: true, defs: []string{"-DLIVE"}},
}

// result is what one search reported.
type result struct {
	errors  int
	stored  int64
	trans   int64
	elapsed time.Duration
}

// runTimeout bounds each command: a search that runs away fails rather
// than holding CI.
const runTimeout = 15 * time.Minute

// checkModel copies dir's models beside src (m's generated include) into
// a scratch directory, runs the safety search of m's model and then each
// liveness claim, and prints what each explored. The first
// counterexample stops it: its trail is replayed and printed as the
// model's own events.
func checkModel(dir string, m machine, src []byte, w io.Writer) error {
	return check(dir, m, src, w, "-O1")
}

// check is checkModel compiling pan with the C optimisation opt (the
// mutants, whose searches end at their first counterexample, take -O0:
// a faster compile).
func check(dir string, m machine, src []byte, w io.Writer, opt string) error {
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("modelgen: %s: %w", tool, ErrNoSpin)
		}
	}
	work, err := os.MkdirTemp("", "mcpkeep-model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("modelgen: -check: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".pml") || e.Name() == m.include {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(work, m.include), src, 0o644); err != nil {
		return err
	}
	built := ""
	for _, p := range m.properties {
		if key := fmt.Sprint(p.live, p.defs); key != built {
			if err := build(work, m.entry, p, opt); err != nil {
				return err
			}
			built = key
		}
		out, err := search(work, p)
		if err != nil {
			return err
		}
		r := parse(out)
		fmt.Fprintf(w, "model: %-9s %-8s %9d states stored, %10d transitions, %6.1fs, errors: %d\n",
			m.name, p.name, r.stored, r.trans, r.elapsed.Seconds(), r.errors)
		if strings.Contains(out, "MEMLIM") || strings.Contains(out, "max search depth too small") {
			fmt.Fprint(w, reason(out))
			return fmt.Errorf("modelgen: %s: %w", p.name, ErrIncomplete)
		}
		if r.errors > 0 || !strings.Contains(out, "errors: 0") {
			fmt.Fprintf(w, "model: counterexample for %s:\n", p.name)
			fmt.Fprint(w, reason(out))
			trail, terr := replay(work, m.entry, p)
			fmt.Fprint(w, trail)
			if terr != nil {
				fmt.Fprintf(w, "model: replaying the trail: %v\n", terr)
			}
			return fmt.Errorf("modelgen: %s: %w", p.name, ErrCounterexample)
		}
	}
	return nil
}

func command(dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("modelgen: %s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out.String(), 40))
	}
	return out.String(), nil
}

// build generates pan.c and compiles the verifier: without cycle
// detection for the safety search, with it (and weak fairness) for LTL.
func build(dir, entry string, p property, opt string) error {
	spinArgs := append(append([]string{}, p.defs...), "-a", entry)
	// MEMLIM: a search that outgrows 2 GiB fails instead of swapping;
	// NFAIR: weak fairness over every process the model may run.
	ccArgs := []string{opt, "-w", "-DMEMLIM=2048", "-DNFAIR=12", "-o", "pan", "pan.c"}
	if !p.live {
		ccArgs = append([]string{"-DSAFETY"}, ccArgs...)
	}
	if _, err := command(dir, "spin", spinArgs...); err != nil {
		return err
	}
	_, err := command(dir, "gcc", ccArgs...)
	return err
}

func search(dir string, p property) (string, error) {
	args := []string{"-m1000000"}
	if p.live {
		args = append(args, "-a", "-f", "-N", p.name)
	}
	out, err := command(dir, "./pan", args...)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// pan exits non-zero on some errors; its report says which.
		return out, nil
	}
	return out, err
}

var (
	reErrors  = regexp.MustCompile(`errors: (\d+)`)
	reStored  = regexp.MustCompile(`(\d+) states, stored`)
	reTrans   = regexp.MustCompile(`(\d+) transitions \(`)
	reElapsed = regexp.MustCompile(`elapsed time ([0-9.e+-]+) seconds`)
)

func parse(out string) result {
	var r result
	if m := reErrors.FindStringSubmatch(out); m != nil {
		r.errors, _ = strconv.Atoi(m[1])
	}
	if m := reStored.FindStringSubmatch(out); m != nil {
		r.stored, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reTrans.FindStringSubmatch(out); m != nil {
		r.trans, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reElapsed.FindStringSubmatch(out); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		r.elapsed = time.Duration(f * float64(time.Second))
	}
	return r
}

// reason is pan's own line saying what broke (assertion, end state,
// acceptance cycle), and any warning that the search was cut short.
func reason(out string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "pan:") && !strings.HasPrefix(l, "pan: elapsed") && !strings.Contains(l, "wrote") && !strings.Contains(l, "elapsed") && !strings.Contains(l, "rate") ||
			strings.Contains(l, "Search not completed") || strings.Contains(l, "max search depth too small") {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// replay runs the trail through spin -t and keeps the model's own events
// (its printf lines, "EV ...") and SPIN's verdict lines, so the
// counterexample reads as a sequence of events.
func replay(dir, entry string, p property) (string, error) {
	args := []string{"-t", "-T"} // -T: printf lines unindented
	// The trail names its claim: spin -t replays against that one.
	args = append(args, p.defs...)
	args = append(args, entry)
	out, err := command(dir, "spin", args...)
	return events(out), err
}

func events(out string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "EV "):
			b.WriteString("  " + strings.TrimSpace(strings.TrimPrefix(l, "EV ")) + "\n")
		case strings.Contains(l, "assertion violated"), strings.Contains(l, "START OF CYCLE"),
			strings.Contains(l, "invalid end state"), strings.Contains(l, "acceptance cycle"):
			b.WriteString("  ** " + l + "\n")
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
