package benchsuite

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitFloor is the die → lost ratio to CommandTransport's c that a
// supervisor reporting the loss at the exit can promise: c plus the
// exit's own wait (the kernel's EOF → exit gap and exit → lost), over c,
// rounded up to the hundredth.
func waitFloor(wait, c time.Duration) float64 {
	if c <= 0 {
		return 0
	}
	return math.Ceil(100*float64(c+wait)/float64(c)) / 100
}

// pairedDetect is the median over crash cycles i of the supervisor's die →
// lost over the CommandTransport detection run right after it (0 when
// the two were not interleaved one for one).
func pairedDetect(mk []crashSample, sdk []sdkResult) float64 {
	if len(mk) != len(sdk) || len(mk) == 0 {
		return 0
	}
	rs := make([]float64, len(mk))
	for i := range mk {
		rs[i] = ms(mk[i].lost) / ms(sdk[i].fromDie)
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// verdict compares a figure with an upper bound.
func verdict(ok bool, reason string) (string, string) {
	if ok {
		return OK, ""
	}
	return Missed, reason
}

func pick(ss []crashSample, f func(crashSample) time.Duration) durations {
	out := make(durations, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func countOver(d durations, limit time.Duration) int {
	n := 0
	for _, x := range d {
		if x > limit {
			n++
		}
	}
	return n
}

// pickTimed is pick over the samples where f's figure was timed.
func pickTimed(samples []crashSample, f func(crashSample) (time.Duration, bool)) durations {
	var out durations
	for _, s := range samples {
		if d, ok := f(s); ok {
			out = append(out, d)
		}
	}
	return out
}

func sdkPick(rs []sdkResult, f func(sdkResult) time.Duration) durations {
	out := make(durations, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func detectionRows(rep *Report, sr *stdioResult) {
	fromDie := func(s crashSample) time.Duration { return s.lost }
	fromExit := func(s crashSample) time.Duration { return s.lost - s.exit }
	sdkDie := func(r sdkResult) time.Duration { return r.fromDie }
	for _, srv := range []struct {
		name string
		mk   []crashSample
		sdk  []sdkResult
		caps int
	}{{"plain server", sr.plain, sr.sdkPlain, 0}, {"grandchild holds stdout", sr.grand, sr.sdkGrand, sr.sdkGrandCaps}} {
		d := pick(srv.mk, fromDie)
		for _, q := range []struct {
			p      float64
			target time.Duration
		}{{50, 2 * time.Millisecond}, {99, 10 * time.Millisecond}} {
			v := d.pct(q.p)
			row := Row{Section: secDetect, Metric: fmt.Sprintf("die sent → lost, %s, p%.0f (n=%d)", srv.name, q.p, len(d)),
				Mcpkeep: fmtDur(v), Target: "≤ " + fmtDur(q.target)}
			if srv.caps > 0 {
				row.Comparison = fmt.Sprintf("CommandTransport > %s (%d of %d capped)", fmtDur(sr.sdkGrandLimit), srv.caps, len(srv.sdk))
				row.Ratio = "< " + fmtRatio(ms(v), ms(sr.sdkGrandLimit))
			} else {
				c := sdkPick(srv.sdk, sdkDie).pct(q.p)
				row.Comparison = fmt.Sprintf("CommandTransport %s (n=%d)", fmtDur(c), len(srv.sdk))
				row.Ratio = fmtRatio(ms(v), ms(c))
			}
			why := fmt.Sprintf("%d of %d samples over %s, max %s", countOver(d, q.target), len(d), fmtDur(q.target), fmtDur(d.max()))
			switch {
			case q.p != 50:
			case srv.caps > 0:
				why += "; CommandTransport never saw this loss; most of the time is the fixture's death and the kernel's " +
					"teardown before the exit report, outside any client (mcpkeep's part after it: the \"of which after " +
					"the exit report\" row); the reachable target is the ratio to a client that sees the loss at all"
			case sdkPick(srv.sdk, sdkDie).pct(50) > q.target:
				why += fmt.Sprintf("; the SDK's own CommandTransport, which sees the loss at stdout's EOF without waiting "+
					"for the exit, took %s at p50 in this run: the absolute target is under what any client took on this "+
					"machine; the reachable one is the interleaved ratio to CommandTransport (≤ 1.00, below) with mcpkeep's "+
					"own part after the exit (exit → lost, ≤ 150 µs)", fmtDur(sdkPick(srv.sdk, sdkDie).pct(50)))
			default:
				why += fmt.Sprintf("; CommandTransport took %s at p50 in this run", fmtDur(sdkPick(srv.sdk, sdkDie).pct(50)))
			}
			row.Verdict, row.Reason = verdict(v <= q.target, why)
			rep.add(row)
		}
		e := pick(srv.mk, fromExit)
		if srv.caps == 0 {
			// Issue 16's targets for a plain server: the exit seen within
			// 150 µs (p50) and 1 ms (p99), and die sent → lost no slower
			// than CommandTransport at p50. The exit is the moment the
			// bench's own watcher (a pidfd polled on a thread of its own)
			// sees it; the exit report comes earlier, by the kernel's
			// teardown of the child.
			x := pickTimed(srv.mk, func(s crashSample) (time.Duration, bool) { return s.lost - s.exited, s.exited > 0 })
			teardown := pickTimed(srv.mk, func(s crashSample) (time.Duration, bool) { return s.exited - s.exit, s.exited > 0 && s.exit > 0 })
			why := "after the exit: the waiter's wake-up (" + exitWatch() + "), the stderr tail's catch-up, the EOF handed " +
				"to the SDK's reader, the connection's end, and the message to the supervisor's loop: five goroutine " +
				"hand-offs on 2 cores"
			for _, q := range []struct {
				p      float64
				target time.Duration
			}{{50, 150 * time.Microsecond}, {99, time.Millisecond}} {
				row := Row{Section: secDetect, Metric: fmt.Sprintf("%s: exit → lost, p%.0f (n=%d)", srv.name, q.p, len(x)),
					Target: "≤ " + fmtDur(q.target)}
				if len(x) == 0 {
					row.Mcpkeep = "not measured"
					row.Verdict, row.Reason = verdict(false, "no pidfd to watch the exit with (Linux 5.3 or later)")
				} else {
					v := x.pct(q.p)
					row.Mcpkeep = fmtDur(v)
					row.Comparison = fmt.Sprintf("exit report → lost %s", fmtDur(e.pct(q.p)))
					row.Verdict, row.Reason = verdict(v <= q.target, why)
				}
				rep.add(row)
			}
			if len(teardown) > 0 {
				rep.add(Row{Section: secDetect, Metric: fmt.Sprintf("%s: exit report → exit (the kernel's teardown of the child), p50 / p99", srv.name),
					Mcpkeep: fmtDur(teardown.pct(50)) + " / " + fmtDur(teardown.pct(99)), Target: "—", Verdict: Info})
			}
			if len(sr.kernelGap) > 0 {
				rep.add(Row{Section: secDetect, Metric: fmt.Sprintf("the kernel: the fixture's stdout EOF → its exit notified (pidfd), no transport, p50 / p99 (n=%d)", len(sr.kernelGap)),
					Mcpkeep: fmtDur(sr.kernelGap.pct(50)) + " / " + fmtDur(sr.kernelGap.pct(99)), Target: "—", Verdict: Info})
			}
			rep0 := pickTimed(srv.mk, func(s crashSample) (time.Duration, bool) { return s.exit, s.exit > 0 })
			if len(sr.sdkReport) > 0 {
				rep.add(Row{Section: secDetect, Metric: "plain server: die sent → the fixture's exit report / exit report → exit, p50: supervised generation",
					Mcpkeep:    fmtDur(rep0.pct(50)) + " / " + fmtDur(teardown.pct(50)),
					Comparison: fmt.Sprintf("an SDK session on the same transport.Stdio %s / %s (n=%d)", fmtDur(sr.sdkReport.pct(50)), fmtDur(sr.sdkTeardown.pct(50)), len(sr.sdkReport)),
					Target:     "—", Verdict: Info})
			}
			why = fmt.Sprintf("CommandTransport reports the loss at stdout's EOF, mcpkeep at the exit (its status and "+
				"stderr tail go into the loss log): the kernel notifies the exit %s after the EOF (p50, the row above); "+
				"an SDK session over mcpkeep's transport.Stdio took %s, the supervisor %s; of the supervisor's: die sent "+
				"→ the fixture's exit report %s (%s on the SDK session), exit report → exit %s (%s), exit → lost %s. "+
				"Parts of a millisecond that move by more than their difference from one run to the next on this shared "+
				"2-core machine. Waiting for the exit costs at most the kernel's gap plus exit → lost (%s) over "+
				"CommandTransport's %s: the reachable target while the loss waits for the exit is ratio ≤ %.2f",
				fmtDur(sr.kernelGap.pct(50)), fmtDur(sr.transPlain.pct(50)), fmtDur(d.pct(50)),
				fmtDur(rep0.pct(50)), fmtDur(sr.sdkReport.pct(50)), fmtDur(teardown.pct(50)), fmtDur(sr.sdkTeardown.pct(50)),
				fmtDur(x.pct(50)), fmtDur(sr.kernelGap.pct(50)+x.pct(50)), fmtDur(sdkPick(srv.sdk, sdkDie).pct(50)),
				waitFloor(sr.kernelGap.pct(50)+x.pct(50), sdkPick(srv.sdk, sdkDie).pct(50)))
			v, c := d.pct(50), sdkPick(srv.sdk, sdkDie).pct(50)
			row := Row{Section: secDetect, Metric: fmt.Sprintf("die sent → lost, %s, p50, beside CommandTransport (interleaved)", srv.name),
				Mcpkeep: fmtDur(v), Comparison: fmt.Sprintf("CommandTransport %s; the cycles' own ratios: median %.3f", fmtDur(c), pairedDetect(srv.mk, srv.sdk)),
				Ratio: fmtRatio(ms(v), ms(c)), Target: "ratio ≤ 1.00"}
			row.Verdict, row.Reason = verdict(v <= c, why)
			rep.add(row)
		} else {
			rep.add(Row{Section: secDetect, Metric: fmt.Sprintf("%s: of which after the exit report, p50 / p99", srv.name),
				Mcpkeep: fmtDur(e.pct(50)) + " / " + fmtDur(e.pct(99)), Target: "—", Verdict: Info})
		}
		t := sr.transPlain
		if srv.caps > 0 {
			t = sr.transGrand
		}
		rep.add(Row{Section: secDetect, Metric: fmt.Sprintf("%s: supervisor vs SDK session on transport.Stdio, p50 / p99", srv.name),
			Mcpkeep: fmtDur(d.pct(50)) + " / " + fmtDur(d.pct(99)), Comparison: fmt.Sprintf("no supervisor %s / %s (n=%d)", fmtDur(t.pct(50)), fmtDur(t.pct(99)), len(t)),
			Ratio: fmtRatio(ms(d.pct(50)), ms(t.pct(50))) + " at p50", Target: "—", Verdict: Info})
	}
	rep.note(secDetect, "time from sending the tool call `die` (the fixture exits at once, without replying) to the "+
		"supervisor's `established -closed-> lost` transition as an observer sees it (real clock), over a supervised "+
		"transport.Stdio; beside it the SDK's own mcp.CommandTransport on the same fixture, from sending `die` to "+
		"ClientSession.Wait returning, one CommandTransport detection after each supervised crash cycle so that both "+
		"sides see the same load of the machine. So both include the request's trip and the fixture's exit. The `no supervisor` "+
		"figures are an SDK session over mcpkeep's own transport.Stdio, from sending `die` to Wait returning: the "+
		"transport's share, the rest being the supervisor's. The `after the exit "+
		"report` rows time mcpkeep from the fixture's own report instead: it writes \"exiting with status 4\" to "+
		"stderr right before it exits, and the transport reads the child's stderr (its Logger gets each line) before "+
		"it reports the loss. In grandchild mode the fixture first spawns a copy of itself that holds stdout for %s "+
		"(as npx, uvx and sh wrappers do): CommandTransport's Wait returns only when that grandchild exits, so its "+
		"%d samples run concurrently and are capped at %s (the process group is then killed): its figure is a lower "+
		"bound. The grandchild supervisor uses %s teardown graces so that its group is signalled at once; detection "+
		"does not depend on them. The transport learnt of each exit through %s.", fmtDur(fixture.GrandchildSleep), len(sr.sdkGrand), fmtDur(sr.sdkGrandLimit), fmtDur(sr.grandGrace), exitWatch())
}

// exitWatch names how transport.Stdio learnt of the exits of this run.
func exitWatch() string {
	if w := transport.ExitWatch(); w != "" {
		return w
	}
	return "no exit seen"
}

func recoveryRows(rep *Report, sr *stdioResult) {
	rec := pick(sr.plain, recovery)
	// Issue 25's target: against a cold connect that lists every kind the
	// supervisor lists, and its first call.
	v, ca := rec.pct(50), sr.coldAllCall.pct(50)
	row := Row{Section: secRecovery, Metric: fmt.Sprintf("exit → next call OK, minus the %s delay, p50 (n=%d)", fmtDur(retryDelay), len(rec)),
		Mcpkeep: fmtDur(v), Comparison: fmt.Sprintf("cold connect listing every kind (tools, prompts, resources, templates) %s + its first call = %s (n=%d)",
			fmtDur(sr.coldAll.pct(50)), fmtDur(ca), len(sr.coldAllCall)),
		Ratio: fmtRatio(ms(v), ms(ca)), Target: "ratio ≤ 1.05"}
	row.Verdict, row.Reason = verdict(ms(v) <= 1.05*ms(ca), recoveryReason(sr))
	rep.add(row)
	c := sr.coldCall.pct(50)
	rep.add(Row{Section: secRecovery, Metric: "the same, p50, beside a cold connect that lists tools alone, and its first call",
		Mcpkeep: fmtDur(v), Comparison: fmt.Sprintf("cold connect + its first call %s (n=%d)", fmtDur(c), len(sr.coldCall)),
		Ratio: fmtRatio(ms(v), ms(c)), Target: "—", Verdict: Info})
	for _, p := range []float64{50, 99} {
		v, c := rec.pct(p), sr.cold.pct(p)
		rep.add(Row{Section: secRecovery, Metric: fmt.Sprintf("the same, p%.0f, beside a cold connect alone (no call)", p),
			Mcpkeep: fmtDur(v), Comparison: fmt.Sprintf("cold connect %s", fmtDur(c)),
			Ratio: fmtRatio(ms(v), ms(c)), Target: "—", Verdict: Info})
	}
	ph := phases(sr.plain)
	rep.add(Row{Section: secRecovery, Metric: "p50 phases: exit→lost / barrier / delay overrun to Open / spawn / handshake+list+swap / call",
		Mcpkeep: fmt.Sprintf("%s / %s / %s / %s / %s / %s", fmtDur(ph[0]), fmtDur(ph[1]), fmtDur(ph[2]), fmtDur(ph[3]),
			fmtDur(ph[4]), fmtDur(ph[5])),
		Comparison: fmt.Sprintf("cold: spawn %s / handshake+list %s / call %s; bare AfterFunc overrun %s", fmtDur(sr.coldOpen.pct(50)),
			fmtDur(coldHandshake(sr).pct(50)), fmtDur(coldCall(sr).pct(50)), fmtDur(sr.timerOverrun.pct(50))),
		Target: "—", Verdict: Info})
	rep.note(secRecovery, "in each of the plain server's crash cycles, the time from the fixture's exit (as the "+
		"bench's own pidfd watcher sees it, section 1; the exit report where pidfds are missing) "+
		"until a WaitForReady call of `echo` succeeds on the new generation, minus the policy's constant %s retry "+
		"delay; beside it, interleaved cycle by cycle, a cold connect of the same server as a host without mcpkeep "+
		"would reconnect: transport.Stdio Open (spawn), mcp.Client.Connect (handshake) and tools/list, then (timed "+
		"apart) its first `echo` call; and a second cold connect that lists prompts, resources and templates too, as "+
		"the supervisor does, and its first call. Phases (p50 of each): exit → lost; lost → backing-off (close barrier: child "+
		"reaped, group gone); backing-off → the attempt calls Opener.Open, minus the delay (the retry timer's overrun "+
		"and the attempt's start); Open (spawn); Open's return → established (handshake, every list the server "+
		"offers: tools, prompts, resources, templates; the swap); "+
		"established → the call returned (wake-up and one round trip). The bare AfterFunc overrun is a "+
		"time.AfterFunc(%s) handing its time to a waiting goroutine, measured from an idle process (p50 of %d). "+
		"The cold connect starts after a %s sleep, "+
		"as the supervised one starts after the delay's idle: an idle (virtual) CPU can wake slowly, and in trial "+
		"runs without the sleep the cold spawn came out about 0.3 ms faster than the supervised one; with it they "+
		"match. That wake-up is not the supervisor's doing.",
		fmtDur(retryDelay), fmtDur(retryDelay), len(sr.timerOverrun), fmtDur(retryDelay))
}

// phases are the p50s of exit→lost, the barrier, retry → Open (the
// timer's overrun of the delay and the attempt's start), the spawn, the
// handshake with tools/list and swap, and the call.
// exitAt is the sample's exit as the bench's watcher saw it, else the
// fixture's exit report.
func (s crashSample) exitAt() time.Duration {
	if s.exited > 0 {
		return s.exited
	}
	return s.exit
}

// recovery is a crash cycle's exit → next call OK, minus the retry delay.
func recovery(s crashSample) time.Duration { return s.callOK - s.exitAt() - retryDelay }

func phases(ss []crashSample) [6]time.Duration {
	p := func(f func(s crashSample) time.Duration) time.Duration { return pick(ss, f).pct(50) }
	return [6]time.Duration{
		p(func(s crashSample) time.Duration { return s.lost - s.exitAt() }),
		p(func(s crashSample) time.Duration { return s.backingOff - s.lost }),
		p(func(s crashSample) time.Duration { return s.openStart - s.backingOff - retryDelay }),
		p(func(s crashSample) time.Duration { return s.openEnd - s.openStart }),
		p(func(s crashSample) time.Duration { return s.established - s.openEnd }),
		p(func(s crashSample) time.Duration { return s.callOK - s.established }),
	}
}

func coldHandshake(sr *stdioResult) durations {
	out := make(durations, len(sr.cold))
	for i := range out {
		out[i] = sr.cold[i] - sr.coldOpen[i]
	}
	return out
}

func coldCall(sr *stdioResult) durations {
	out := make(durations, len(sr.cold))
	for i := range out {
		out[i] = sr.coldCall[i] - sr.cold[i]
	}
	return out
}

// recoveryReason says where the time over a cold connect and its first
// call goes: the phases a cold connect does not have, and each common
// phase's excess over its cold counterpart; what is left is the
// supervisor's own share beyond the machine's timer overrun.
func recoveryReason(sr *stdioResult) string {
	ph := phases(sr.plain)
	coldSpawn, coldHS, coldC := sr.coldOpen.pct(50), coldHandshake(sr).pct(50), coldCall(sr).pct(50)
	over := sr.timerOverrun.pct(50)
	extra := []struct {
		what string
		d    time.Duration
	}{
		{"the loss seen after the exit", ph[0]},
		{"the close barrier", ph[1]},
		{fmt.Sprintf("the retry timer's overrun to Open (a bare time.AfterFunc overruns %s here)", fmtDur(over)), ph[2]},
		{fmt.Sprintf("spawn over the cold one's %s", fmtDur(coldSpawn)), ph[3] - coldSpawn},
		{fmt.Sprintf("handshake, every list (tools, prompts, resources, templates) and the swap over the cold handshake and tools/list's %s", fmtDur(coldHS)), ph[4] - coldHS},
		{fmt.Sprintf("the call after established over a cold connect's first call (%s)", fmtDur(coldC)), ph[5] - coldC},
	}
	var parts []string
	var sum time.Duration
	for _, e := range extra {
		parts = append(parts, fmt.Sprintf("%s %s", e.what, signedDur(e.d)))
		sum += e.d
	}
	ca := sr.coldAllCall.pct(50)
	rest := ca - coldC - sr.coldAll.pct(50) + coldSpawn + coldHS
	return fmt.Sprintf("over the cold connect that lists every kind and its first call (%s; 5%% is %s) the supervised recovery spends, "+
		"at p50 of each phase: %s; in all %s, against the phases of a cold connect that lists tools alone (the every-kind cold "+
		"connect's own 3 more lists and slower first call are %s of that). What is the supervisor's own: the loss's detection, "+
		"the close barrier (the group proven gone before the next spawn, R27) and the retry timer: %s, of which the machine's "+
		"own timer overrun is %s",
		fmtDur(ca), fmtDur(ca/20), strings.Join(parts, "; "), signedDur(sum), signedDur(rest),
		fmtDur(ph[0]+ph[1]+ph[2]), fmtDur(over))
}

func signedDur(d time.Duration) string {
	if d < 0 {
		return fmtDur(d)
	}
	return "+" + fmtDur(d)
}

func callRows(rep *Report, cr []callResult, cfg Config) {
	for _, c := range cr {
		t := c.times
		r, prs := t.ratio, pairRatios(t)
		rep.add(Row{Section: secCall, Metric: "time/op, " + c.name + " caller ctx (median of interleaved batches, p10–p90; ratio: median of the pairs' own)",
			Mcpkeep: usSpread(t.b), Comparison: "direct CallTool " + usSpread(t.a),
			Ratio: ratioAgainst(r, 1.05), Target: "ratio ≤ 1.05",
			Verdict: pickVerdict(r <= 1.05), Reason: fmt.Sprintf("the pairs' own ratios have a median of %.3f (p25 %.3f, "+
				"p75 %.3f over %d pairs of %d calls a side): the supervised call is %.1f µs/op slower at the median",
				r, quantileOf(prs, 0.25), quantileOf(prs, 0.75), len(t.a), t.n,
				(quantileOf(t.b, 0.5)-quantileOf(t.a, 0.5))/1e3)})
		extra := c.supervised.allocsPerOp - c.direct.allocsPerOp
		row := Row{Section: secCall, Metric: "allocs/op, " + c.name + " caller ctx",
			Mcpkeep:    fmt.Sprintf("%.1f (%.0f B)", c.supervised.allocsPerOp, c.supervised.bytesPerOp),
			Comparison: fmt.Sprintf("direct %.1f (%.0f B)", c.direct.allocsPerOp, c.direct.bytesPerOp),
			Ratio:      fmt.Sprintf("%+.1f", extra), Target: "≤ +2",
			Verdict: pickVerdict(extra <= 2), Reason: allocReason(c.name, extra)}
		if strings.HasPrefix(c.name, "fresh") {
			// The context package's own cost of a caller's fresh
			// context (see allocReason) is an info row (issue 25).
			row.Target, row.Verdict, row.Reason = "—", Info, ""
			rep.note(secCall, "The allocs/op row of the fresh caller context is info: %s.", allocReason(c.name, extra))
		}
		rep.add(row)
	}
	rep.note(secCall, "call_bench_test.go's comparison through testing.Benchmark: one supervisor and one direct "+
		"ClientSession (configured like the supervisor's, tools listed first), each over a transport.Memory server "+
		"with the tool echo. Time: %s of alternating batches (ABBA), each batch about %s of calls on one side; "+
		"the time ratio is the median of the pairs' own ratios (a pair's supervised batch over its direct batch, "+
		"run within milliseconds of each other), which a load that comes and goes over seconds on a shared "+
		"machine, or a garbage collection cycle, moves far less than rounds of a second each. Allocations and "+
		"bytes: over all calls of %d alternating testing.Benchmark rounds of %s a side. The direct client "+
		"carries the supervisor's identity (mcpkeep/%s) and capabilities (none declared, as a supervisor without "+
		"host handlers): on protocol 2026-07-28 the server decodes clientInfo and the capabilities from every "+
		"request's _meta, so either one differing shifts allocs/op (a one-byte version string decodes without "+
		"allocating; the SDK's default roots capability costs 18 allocations a call). The background caller context "+
		"can never be cancelled; the cancellable one can and is kept for every call, as a caller with a context of "+
		"its own does; the fresh one is a new context.WithCancel per call on both sides (as the proxy's calls, each "+
		"with its host request's context), made and cancelled around each call on both sides alike.", time.Duration(cfg.Rounds)*cfg.BenchTime, batchTarget,
		min(cfg.Rounds, allocRounds), cfg.BenchTime, mcpkeep.Version)
}

// allocReason explains a call variant's extra allocations.
func allocReason(variant string, extra float64) string {
	r := fmt.Sprintf("%.1f extra allocations per call", extra)
	if strings.HasPrefix(variant, "fresh") {
		r += ": each call's context is new, so watching it for the caller's cancellation (one context.AfterFunc, 2 " +
			"allocations) also makes it that context's first child, and the context package makes its children map " +
			"(2 more); a direct CallTool registers nothing on the caller's context. The only way to none is to cut " +
			"the calls at a generation's end at the connection (the SDK retires every call when its reader stops) " +
			"and give the SDK the caller's context as it is: that is a wrapper of the transport at Connect, outside " +
			"the call path"
	}
	return r
}

// usSpread is "median µs (p10–p90)" of per-op ns.
func usSpread(ns []float64) string {
	return fmt.Sprintf("%.1f µs (%.1f–%.1f)", quantileOf(ns, 0.5)/1e3, quantileOf(ns, 0.1)/1e3, quantileOf(ns, 0.9)/1e3)
}

// pairRatios are interleaveBatches' pairs' own ratios, b over a.
func pairRatios(t batchPairs) []float64 {
	rs := make([]float64, len(t.a))
	for i := range t.a {
		rs[i] = t.b[i] / t.a[i]
	}
	return rs
}

func pickVerdict(ok bool) string {
	if ok {
		return OK
	}
	return Missed
}

func soakRows(rep *Report, m *memSoakResult, p *procSoakResult) {
	const heapSlack = 64 * 1024
	g := Row{Section: secSoak, Metric: fmt.Sprintf("in-memory, %d cycles: goroutines", m.cycles),
		Mcpkeep: fmt.Sprintf("%d after", m.gAfter), Comparison: fmt.Sprintf("%d before", m.gBefore),
		Ratio: fmt.Sprintf("%+d", m.gAfter-m.gBefore), Target: "= before"}
	g.Verdict, g.Reason = verdict(m.gAfter <= m.gBefore, fmt.Sprintf("%d goroutines more after the cycles", m.gAfter-m.gBefore))
	rep.add(g)
	dh := float64(m.hAfter) - float64(m.hBefore)
	h := Row{Section: secSoak, Metric: fmt.Sprintf("in-memory, %d cycles: live heap after GC", m.cycles),
		Mcpkeep: fmtBytes(float64(m.hAfter)) + " after", Comparison: fmtBytes(float64(m.hBefore)) + " before",
		Ratio: fmtBytes(dh), Target: "≤ before + 64 KiB"}
	h.Verdict, h.Reason = verdict(dh <= heapSlack, fmt.Sprintf("the heap grew %s, %.0f B per cycle", fmtBytes(dh), dh/float64(m.cycles)))
	rep.add(h)
	e := Row{Section: secSoak, Metric: "in-memory: goroutines / heap after Dispose",
		Mcpkeep:    fmt.Sprintf("%d / %s", m.gEnd, fmtBytes(float64(m.hEnd))),
		Comparison: fmt.Sprintf("%d / %s before Start", m.gPre, fmtBytes(float64(m.hPre))),
		Ratio:      fmt.Sprintf("%+d / %s", m.gEnd-m.gPre, fmtBytes(float64(m.hEnd)-float64(m.hPre))), Target: "≤ before Start (+64 KiB heap)"}
	e.Verdict, e.Reason = verdict(m.gEnd <= m.gPre && float64(m.hEnd)-float64(m.hPre) <= heapSlack,
		fmt.Sprintf("%+d goroutines, %s heap after Dispose", m.gEnd-m.gPre, fmtBytes(float64(m.hEnd)-float64(m.hPre))))
	rep.add(e)
	o := Row{Section: secSoak, Metric: "in-memory: opens while the previous generation was live",
		Mcpkeep: fmt.Sprintf("%d of %d opens", m.overlaps, m.opens), Target: "0"}
	o.Verdict, o.Reason = verdict(m.overlaps == 0, "a generation opened before its predecessor's close barrier")
	rep.add(o)

	fd := Row{Section: secSoak, Metric: fmt.Sprintf("real process, %d cycles: open fds after Dispose", p.cycles),
		Mcpkeep: fmt.Sprint(p.fdAfter), Comparison: fmt.Sprintf("%d before Start", p.fdBefore),
		Ratio: fmt.Sprintf("%+d", p.fdAfter-p.fdBefore), Target: "= before"}
	fd.Verdict, fd.Reason = verdict(p.fdAfter <= p.fdBefore, fmt.Sprintf("%d descriptors more", p.fdAfter-p.fdBefore))
	rep.add(fd)
	ch := Row{Section: secSoak, Metric: "real process: child processes (live + zombie) after Dispose",
		Mcpkeep: fmt.Sprintf("%d + %d", p.chAfter, p.zAfter), Comparison: fmt.Sprintf("%d + %d before Start", p.chBefore, p.zBefore),
		Ratio: fmt.Sprintf("%+d", p.chAfter+p.zAfter-p.chBefore-p.zBefore), Target: "= before"}
	ch.Verdict, ch.Reason = verdict(p.chAfter+p.zAfter <= p.chBefore+p.zBefore, "child processes left behind")
	rep.add(ch)
	ov := Row{Section: secSoak, Metric: fmt.Sprintf("real process: samples with two live processes (every %s)", fmtDur(p.period)),
		Mcpkeep:    fmt.Sprintf("%d of %d (max live %d)", p.overlaps, p.samples, p.maxLive),
		Comparison: fmt.Sprintf("control, two spawned at once: %d of %d", p.ctlOver, p.ctlSamples), Target: "0"}
	ov.Verdict, ov.Reason = verdict(p.overlaps == 0 && p.samples > 0 && p.ctlOver > 0,
		fmt.Sprintf("%d samples saw two processes of one server alive (control %d of %d)", p.overlaps, p.ctlOver, p.ctlSamples))
	rep.add(ov)
	rep.note(secSoak, "in memory: one supervisor on a mock clock (clock.NewMock), policy 100 ms doubling to 1 s; a "+
		"cycle kills the current generation (MemGen.Kill), waits for backing-off, advances the clock to the retry "+
		"and waits for established; every 1,000 cycles the clock also passes the stability window (budget reset). "+
		"Each generation comes from a fresh transport.Memory (a shared one keeps every generation for tests to inspect). "+
		"Goroutines are counted once steady, the heap after two GCs, after %d warm-up cycles and after the %d cycles "+
		"(%s; the loop dropped %d stale signals). A generation is killed only once its server has acknowledged the "+
		"session's subscriptions/listen: go-sdk v1.8.0's ServerSession.Close can otherwise miss a listen that is "+
		"not yet registered and wait for it forever (server side, not the supervisor). Real processes: %d die → WaitForReady cycles over transport.Stdio (%s); /proc/self/fd and this process's "+
		"children (/proc) before Start and after Dispose; a sampler checks every %s, newest first, which of the "+
		"supervisor's processes are alive (not zombies); as a control it must see two when two are spawned at once.",
		m.warmup, m.cycles, m.elapsed.Round(time.Second), m.dropped, p.cycles, p.elapsed.Round(time.Second), fmtDur(p.period))
}

func scaleRows(rep *Report, sc *scaleResult) {
	r0, r5 := sc.runs[0], sc.runs[1]
	rep.add(Row{Section: secScale, Metric: fmt.Sprintf("heap per idle supervisor (%d, after GC)", sc.n),
		Mcpkeep: fmtBytes(r0.heapPer), Comparison: "direct session " + fmtBytes(sc.directHeap),
		Ratio: fmtRatio(r0.heapPer, sc.directHeap), Target: "—", Verdict: Info})
	rep.add(Row{Section: secScale, Metric: "goroutines per idle supervisor",
		Mcpkeep: fmt.Sprintf("%.1f", r0.goroutinesP), Comparison: fmt.Sprintf("direct session %.1f", sc.directGor),
		Ratio: fmtRatio(r0.goroutinesP, sc.directGor), Target: "—", Verdict: Info})
	for _, r := range sc.runs {
		per := r.cpu / time.Duration(sc.n)
		rep.add(Row{Section: secScale, Metric: fmt.Sprintf("CPU per reconnect, all %d dropped at once, jitter %.1f", sc.n, r.jitter),
			Mcpkeep: fmtDur(per), Comparison: "direct reconnect " + fmtDur(sc.directCPU),
			Ratio: fmtRatio(ms(per), ms(sc.directCPU)), Target: "—", Verdict: Info})
	}
	win := func(ts []time.Time) int { return maxInWindow(ts, 100*time.Millisecond) }
	rep.add(Row{Section: secScale, Metric: "most redials in any 100 ms, as scheduled (NextRetry): jitter 0.5 vs 0",
		Mcpkeep: fmt.Sprintf("%d of %d", win(r5.scheduled), sc.n), Comparison: fmt.Sprintf("%d of %d", win(r0.scheduled), sc.n),
		Ratio: fmtRatio(float64(win(r5.scheduled)), float64(win(r0.scheduled))), Target: "—", Verdict: Info})
	rep.add(Row{Section: secScale, Metric: "most redials in any 100 ms, as fired (retry_due): jitter 0.5 vs 0",
		Mcpkeep: fmt.Sprintf("%d of %d", win(r5.arrivals), sc.n), Comparison: fmt.Sprintf("%d of %d", win(r0.arrivals), sc.n),
		Ratio: fmtRatio(float64(win(r5.arrivals)), float64(win(r0.arrivals))), Target: "—", Verdict: Info})
	rep.add(Row{Section: secScale, Metric: "redial spread first → last, scheduled / fired: jitter 0.5 vs 0",
		Mcpkeep: fmtDur(span(r5.scheduled)) + " / " + fmtDur(span(r5.arrivals)), Comparison: fmtDur(span(r0.scheduled)) + " / " + fmtDur(span(r0.arrivals)),
		Target: "—", Verdict: Info})
	rep.add(Row{Section: secScale, Metric: "losses through the barrier (→ backing-off), first → last: jitter 0.5 vs 0",
		Mcpkeep: fmtDur(span(r5.released)), Comparison: fmtDur(span(r0.released)), Target: "—", Verdict: Info})
	rep.add(Row{Section: secScale, Metric: "drop → all re-established: jitter 0.5 vs 0",
		Mcpkeep: fmtDur(r5.settled), Comparison: fmtDur(r0.settled), Target: "—", Verdict: Info})
	rep.note(secScale, "%d supervisors in one process, each over its own transport.Memory server, policy initial "+
		"delay %s; the comparison is %d direct SDK sessions over the same servers, configured like the supervisor's. "+
		"Idle memory is the live-heap delta after GC divided by the count. Then every current generation is killed "+
		"at once (MemGen.Kill, %s for all with jitter 0) and process CPU time (getrusage) is taken until all are "+
		"established again, divided by the reconnects; the direct hosts reconnect by hand (wait for the loss, close, "+
		"connect, list, no delay: %s wall). A redial is scheduled when the loss has gone through the barrier "+
		"(→ backing-off, whose NextRetry is the policy's redial time) and fires as the retry_due → connecting "+
		"transition; fired times also carry the herd's own CPU load (%d reconnects on this machine's cores), "+
		"scheduled ones only the policy. With jitter j the delay is d·(1−j·U), so jitter 0.5 spreads the redials "+
		"over [%s, %s] after each loss.",
		sc.n, fmtDur(sc.delay), sc.n, fmtDur(r0.killSpan), fmtDur(sc.directTotal), sc.n, fmtDur(sc.delay/2), fmtDur(sc.delay))
}

func fsmRows(rep *Report, fr fsmResult, cfg Config) {
	rep.add(Row{Section: secFSM, Metric: "ns per step",
		Mcpkeep: fmt.Sprintf("%.1f ns", fr.fire.nsPerOp), Comparison: fmt.Sprintf("raw looplab Event %.1f ns", fr.looplab.nsPerOp),
		Ratio: fmtRatio(fr.fire.nsPerOp, fr.looplab.nsPerOp), Target: "—", Verdict: Info})
	rep.add(Row{Section: secFSM, Metric: "allocs per step",
		Mcpkeep: fmt.Sprintf("%.2f (%.0f B)", fr.fire.allocsPerOp, fr.fire.bytesPerOp), Comparison: fmt.Sprintf("%.2f (%.0f B)", fr.looplab.allocsPerOp, fr.looplab.bytesPerOp),
		Ratio: fmt.Sprintf("%+.2f", fr.fire.allocsPerOp-fr.looplab.allocsPerOp), Target: "—", Verdict: Info})
	rep.note(secFSM, "fsm/bench_test.go's 11-step cycle (connect, tools change, stable, a stale event, crash, "+
		"backoff, failed retry, a repeated failure, backoff, retry), one op per step: fsm.Machine.Fire (guards "+
		"resolved from the facts, then looplab) beside a raw looplab/fsm FSM on the same 21 rows (guarded rows "+
		"named apart) whose caller already knows the row and drops the stale and repeated signals itself; "+
		"%d alternating rounds of %s: ns of the median round, allocations over all rounds.", cfg.Rounds, cfg.BenchTime)
}
