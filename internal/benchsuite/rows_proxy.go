package benchsuite

import (
	"fmt"
	"strings"
	"time"
)

func proxyRows(rep *Report, hr *hopResult, cfg Config) {
	d, p := hr.calls[0], hr.calls[1]
	ld, lp := hr.legacyCalls[0], hr.legacyCalls[1]
	for _, q := range []struct {
		p      float64
		target time.Duration
	}{{50, 120 * time.Microsecond}, {99, time.Millisecond}} {
		dv, pv := d.pct(q.p), p.pct(q.p)
		added := pv - dv
		row := Row{Section: secProxy, Metric: fmt.Sprintf("echo through mcpkeep proxy, %s, p%.0f (n=%d)", hr.protocol, q.p, len(p)),
			Mcpkeep: fmtDur(pv), Comparison: fmt.Sprintf("direct %s (n=%d)", fmtDur(dv), len(d)),
			Ratio: signedDur(added), Target: "added ≤ " + fmtDur(q.target)}
		row.Verdict, row.Reason = verdict(added <= q.target, hopReason(hr, q.p, added))
		rep.add(row)
	}
	if bd, bp := hr.bareCalls[0], hr.bareCalls[1]; len(bp) > 0 {
		added, floor := p.pct(50)-d.pct(50), bp.pct(50)-bd.pct(50)
		blocks := blockDiffs(p, bp, hopBlock)
		share := blocks.pct(50)
		own := Row{Section: secProxy, Metric: fmt.Sprintf("the hop by part, %s, p50: what any relay process adds (the bare relay below) + mcpkeep's own work; own work: the median of the %d blocks' own differences", hr.protocol, len(blocks)),
			Mcpkeep:    fmt.Sprintf("%s = %s + %s; own work %s", signedDur(added), signedDur(floor), signedDur(added-floor), signedDur(share)),
			Comparison: fmt.Sprintf("the proxy's CPU per relayed call %s (its phases: the profile row)", fmtDur(hr.proxy.cpu)),
			Target:     "own work ≤ " + fmtDur(ownTarget) + " (proposed, issue 39)"}
		own.Verdict, own.Reason = verdict(len(blocks) > 0 && share <= ownTarget, fmt.Sprintf("mcpkeep's own work on the hop, above what a "+
			"bare relay adds beside it: the blocks' own differences range %s to %s; where it goes, the profile row", signedDur(blocks.pct(0)), signedDur(blocks.pct(100))))
		rep.add(own)
		rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("the floor of a hop: echo through a bare relay (io.Copy both ways, no JSON-RPC), %s, p50 / p99 (n=%d)", hr.protocol, len(bp)),
			Mcpkeep: fmtDur(bp.pct(50)) + " / " + fmtDur(bp.pct(99)), Comparison: "direct " + fmtDur(bd.pct(50)) + " / " + fmtDur(bd.pct(99)),
			Ratio: signedDur(bp.pct(50)-bd.pct(50)) + " / " + signedDur(bp.pct(99)-bd.pct(99)), Target: "—", Verdict: Info})
	}
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("echo through mcpkeep proxy, %s, p50 / p99 (n=%d)", hr.legacyProtocol, len(lp)),
		Mcpkeep: fmtDur(lp.pct(50)) + " / " + fmtDur(lp.pct(99)), Comparison: "direct " + fmtDur(ld.pct(50)) + " / " + fmtDur(ld.pct(99)),
		Ratio: signedDur(lp.pct(50)-ld.pct(50)) + " / " + signedDur(lp.pct(99)-ld.pct(99)), Target: "—", Verdict: Info})
	// Issue 25: the proxy's CPU per relayed call no more than the
	// server's own.
	row := Row{Section: secProxy, Metric: fmt.Sprintf("per relayed call in the proxy process, %s: allocations (bytes) / CPU (n=%d; %s: %.1f / %s)",
		hr.protocol, hr.measured, hr.legacyProtocol, hr.legacyProxy.allocs, fmtDur(hr.legacyProxy.cpu)),
		Mcpkeep:    fmt.Sprintf("%.1f (%s) / %s", hr.proxy.allocs, fmtBytes(hr.proxy.bytes), fmtDur(hr.proxy.cpu)),
		Comparison: fmt.Sprintf("the fixture per call: %.1f (%s) / %s", hr.directServer.allocs, fmtBytes(hr.directServer.bytes), fmtDur(hr.directServer.cpu)),
		Ratio:      fmtRatio(float64(hr.proxy.cpu), float64(hr.directServer.cpu)) + " of the CPU", Target: "CPU ratio ≤ 1.00"}
	row.Verdict, row.Reason = verdict(hr.proxy.cpu <= hr.directServer.cpu, "the proxy spends more CPU relaying the call than the fixture spends serving it")
	rep.add(row)
	rep.add(Row{Section: secProxy, Metric: "the fixture behind the proxy, per call: allocations / CPU",
		Mcpkeep:    fmt.Sprintf("%.1f / %s", hr.proxiedServer.allocs, fmtDur(hr.proxiedServer.cpu)),
		Comparison: fmt.Sprintf("called directly %.1f / %s", hr.directServer.allocs, fmtDur(hr.directServer.cpu)),
		Ratio:      fmtRatio(hr.proxiedServer.allocs, hr.directServer.allocs), Target: "—", Verdict: Info})
	if len(hr.profile) > 0 {
		parts := make([]string, len(hr.profile))
		for i, ps := range hr.profile {
			parts[i] = fmt.Sprintf("%s %.1f%% (%s)", ps.what, ps.share, fmtDur(time.Duration(ps.share/100*float64(hr.proxy.cpu))))
		}
		rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("the proxy's CPU profile under back-to-back calls (%d s), by phase: share of the samples in (and that share of the CPU per relayed call)", hr.profileSecs),
			Mcpkeep: strings.Join(parts, "; "), Target: "—", Verdict: Info})
	}
	note := fmt.Sprintf("a go-sdk host (this process, mcp.CommandTransport over stdio, protocol %s) calls the fixture's "+
		"`echo` %d times through `mcpkeep proxy` (built once for the run from ./cmd/mcpkeep, %s, with the suite's probe "+
		"added at build time through go build -overlay: internal/benchsuite/probe) whose config has the fixture as its one "+
		"server, and %d times directly on a fixture it spawned itself, the same process layout otherwise; in blocks of "+
		"100 calls alternating (ABBA), after 50 warm-up calls each; then the same, %d times each, with host sessions "+
		"pinned to %s. Added latency is the difference of the two "+
		"distributions' percentiles. Allocations (runtime.MemStats.Mallocs, as allocs/op counts them) and CPU time "+
		"(getrusage) per call are read from each process's probe around %d more calls, less the cost of a probe read.",
		hr.protocol, len(hr.calls[1]), fmtDur(hr.build), len(hr.calls[0]), len(hr.legacyCalls[1]), hr.legacyProtocol, hr.measured)
	note += fmt.Sprintf(" Last, a %d s CPU profile of the proxy (net/http/pprof through the probe) under back-to-back "+
		"calls, summed up by `go tool pprof -top -cum`: each share is of the samples with that function on the stack, so "+
		"they overlap (decoding runs inside the request's handling).", hr.profileSecs)
	if hr.profilePath != "" {
		note += " The profile is kept in " + hr.profilePath + "."
	}
	rep.note(secProxy, "%s", note)
}

func relayRows(rep *Report, rr *relayResult, cfg Config) {
	for _, proto := range rr.protos {
		pr := rr.progress[proto]
		f, c := pr.first, pr.call
		rep.add(Row{Section: secRelay, Metric: fmt.Sprintf("progress server → host, %s: call sent → first notification, p50 (n=%d)", proto, len(f[1])),
			Mcpkeep: fmtDur(f[1].pct(50)), Comparison: fmt.Sprintf("direct %s (n=%d)", fmtDur(f[0].pct(50)), len(f[0])),
			Ratio: signedDur(f[1].pct(50) - f[0].pct(50)), Target: "—", Verdict: Info})
		rep.add(Row{Section: secRelay, Metric: fmt.Sprintf("progress, %s: the whole call (%d notifications 1 ms apart), p50 / p99", proto, rr.progressSteps),
			Mcpkeep:    fmtDur(c[1].pct(50)) + " / " + fmtDur(c[1].pct(99)),
			Comparison: "direct " + fmtDur(c[0].pct(50)) + " / " + fmtDur(c[0].pct(99)),
			Ratio:      signedDur(c[1].pct(50)-c[0].pct(50)) + " at p50", Target: "—", Verdict: Info})
		row := Row{Section: secRelay, Metric: fmt.Sprintf("progress, %s: notifications received by the host", proto),
			Mcpkeep:    fmt.Sprintf("%d of %d", pr.got[1], pr.sent[1]),
			Comparison: fmt.Sprintf("direct %d of %d", pr.got[0], pr.sent[0]),
			Target:     "all"}
		steps := make([]string, len(pr.lost[1]))
		for k, n := range pr.lost[1] {
			steps[k] = fmt.Sprintf("step %d: %d", k+1, n)
		}
		row.Verdict, row.Reason = verdict(pr.got[1] >= pr.sent[1], fmt.Sprintf("%d notifications never reached the host "+
			"(by step, of %d calls: %s; direct: %d lost). A supervisor alone delivers every one of them to the call's "+
			"handler, so they are lost in the proxy's relay to the host (cmd/mcpkeep)",
			pr.sent[1]-pr.got[1], len(c[1]), strings.Join(steps, ", "), pr.sent[0]-pr.got[0]))
		rep.add(row)
		s := rr.sample[proto]
		how := "input request of the tool call (multi round trip)"
		if proto < "2026-07-28" {
			how = "the server's own sampling/createMessage request"
		}
		rep.add(Row{Section: secRelay, Metric: fmt.Sprintf("sampling round trip server → host → server, %s (%s), p50 / p99 (n=%d)", proto, how, len(s[1])),
			Mcpkeep:    fmtDur(s[1].pct(50)) + " / " + fmtDur(s[1].pct(99)),
			Comparison: "direct " + fmtDur(s[0].pct(50)) + " / " + fmtDur(s[0].pct(99)),
			Ratio:      signedDur(s[1].pct(50)-s[0].pct(50)) + " at p50", Target: "—", Verdict: Info})
	}
	rep.note(secRelay, "on section 7's processes (and, for the legacy protocol, a second pair of host sessions pinned to "+
		"%s): the host calls `slow` {steps: %d, ms: 1} with a progress token of its own, %d times per path and protocol "+
		"in blocks of 25 (ABBA); step 1's notification is sent at once, so call sent → first notification is the "+
		"request's trip and the notification's (counted up to 100 ms after the last call: the SDK runs notification handlers on a "+
		"queue of their own, so a call's last notifications can arrive just after its result). Sampling: the host calls `sample`, whose server asks the host's CreateMessage handler "+
		"(it answers \"ok\" at once) before it replies: on %s as the server's own request (the proxy carries it to the "+
		"host session whose call is in flight), from 2026-07-28 on as an input request of the tool result that the "+
		"host's SDK fulfils and calls again (the proxy bridges it); %d times per path and protocol. The host's handler "+
		"answered %d sampling requests on the direct paths and %d through the proxy.",
		legacyProtocol, rr.progressSteps, cfg.RelayCalls, legacyProtocol, cfg.RelayCalls, rr.sampleAnswered[0], rr.sampleAnswered[1])
}

func startupRows(rep *Report, st *startupResult) {
	p, d := st.proxy.pct(50), st.direct.pct(50)
	row := Row{Section: secStartup, Metric: fmt.Sprintf("proxy of %d servers: start → every server's tools listed upstream, p50 (%d runs)", st.n, len(st.proxy)),
		Mcpkeep: fmtDur(p), Comparison: fmt.Sprintf("slowest of %d direct cold connects at once %s", st.n, fmtDur(d)),
		Ratio: fmtRatio(ms(p), ms(d)), Target: "— (the instant-start issue's warm-cache target)", Verdict: Info}
	// Issue 25 item 5: the start's target belongs to the instant-start
	// issue (with a warm catalog cache); what the time is made of is a note.
	rep.note(secStartup, "%s.", fmt.Sprintf("The proxy's start, %s against the slowest direct connect's %s: initialize is answered %s after the start (the proxy "+
		"holds it until its first apply settled, i.e. every server connected, so the host's first tools/list waits for "+
		"the slowest server), the first tools/list at %s; the %d fixture processes start in parallel on %d cores either "+
		"way, and on top come the proxy's own start and its %d supervised connects, each listing prompts, resources and "+
		"templates besides tools (3 more requests per server for the busy fixtures), and exposing %d tools upstream "+
		"(the SDK checks every schema at AddTool); the proxy itself used %s of CPU by then",
		fmtDur(p), fmtDur(d), fmtDur(st.initDone.pct(50)), fmtDur(st.firstList.pct(50)), st.n, rep.Machine.Cores, st.n, st.tools, fmtDur(st.proxyCPU.pct(50))))
	rep.add(row)
	relists := make([]string, len(st.relists))
	for i, r := range st.relists {
		relists[i] = fmt.Sprint(r)
	}
	rep.add(Row{Section: secStartup, Metric: "initialize answered / first tools/list answered, p50; first list complete",
		Mcpkeep:    fmt.Sprintf("%s / %s; %d of %d runs (list_changed relists per run: %s)", fmtDur(st.initDone.pct(50)), fmtDur(st.firstList.pct(50)), st.firstAll, len(st.proxy), strings.Join(relists, ", ")),
		Comparison: fmt.Sprintf("one cold connect alone %s; median of the %d at once %s", fmtDur(st.single.pct(50)), st.n, fmtDur(st.directMed.pct(50))),
		Target:     "—", Verdict: Info})
	if w := st.warm; w != nil && len(w.proxy) > 0 {
		wp, cold := w.proxy.pct(50), p
		// Each run times the direct fleet and the warm proxy within
		// seconds of each other: the runs' own ratios are what a load that
		// drifts over the minutes of all runs moves least (as the idle
		// row's).
		ratio := medianOf(runRatios(w.proxy, st.direct))
		row := Row{Section: secStartup, Metric: fmt.Sprintf("warm catalog cache, %d servers: start → initialize and first complete tools/list, p50 (%d runs; ratio: median of the runs' own)", st.n, len(w.proxy)),
			Mcpkeep: fmtDur(wp), Comparison: fmt.Sprintf("slowest of %d direct cold connects at once %s", st.n, fmtDur(d)),
			Ratio: ratioAgainst(ratio, 0.25), Target: "ratio ≤ 0.25"}
		row.Verdict, row.Reason = verdict(ratio <= 0.25, fmt.Sprintf("initialize answered at %s, the first "+
			"tools/list complete in %d of %d runs: both come from the cache; no server starts before the host has "+
			"its first complete list (docs/design.md §20). Of the %s: the binary's own start (`mcpkeep version`, "+
			"spawn to exit) %s; the registration of %d cached catalogs (%d tools, each schema encoded and decoded "+
			"twice by the SDK's AddTool, on %d cores, the collector paused meanwhile), while the host's initialize "+
			"waits in the pipe: its session connects after the registration, so the SDK announces no list_changed and "+
			"initialize is answered at once; and %s from initialize to the complete list (two pages of the SDK's 1,000 tools, the host "+
			"decoding every schema). Proposed reachable target (issue 39): ≤ 0.30, about what these steps add up to "+
			"on an unloaded 2-core machine (0.25–0.32 measured); the slowest of 50 cold connects, the denominator, "+
			"grows with the machine's load faster than the proxy's start does",
			fmtDur(w.initDone.pct(50)), w.firstAll, len(w.proxy), fmtDur(wp), fmtDur(st.binStart.pct(50)), st.n, st.tools,
			rep.Machine.Cores, fmtDur(w.firstList.pct(50)-w.initDone.pct(50))))
		rep.add(row)
		relists := make([]string, len(w.relists))
		for i, r := range w.relists {
			relists[i] = fmt.Sprint(r)
		}
		rep.add(Row{Section: secStartup, Metric: "warm catalog cache: initialize answered / first complete tools/list, p50; list_changed relists per run",
			Mcpkeep:    fmt.Sprintf("%s / %s; %s", fmtDur(w.initDone.pct(50)), fmtDur(w.firstList.pct(50)), strings.Join(relists, ", ")),
			Comparison: fmt.Sprintf("the binary's own start %s", fmtDur(st.binStart.pct(50))), Target: "—", Verdict: Info})
		rep.add(Row{Section: secStartup, Metric: "warm catalog cache against the same proxy without one: start → every server's tools listed, p50",
			Mcpkeep: fmtDur(wp), Comparison: "--no-cache " + fmtDur(cold), Ratio: fmtRatio(ms(wp), ms(cold)), Target: "—", Verdict: Info})
	}
	rep.note(secStartup, "a go-sdk host spawns `mcpkeep proxy` (section 7's build) with %d fixture servers in its config, "+
		"initializes, lists the tools and lists again at each tools/list_changed until every server has tools in the "+
		"list (%d tools at the end); from the spawn. Beside it, in each of the %d runs, the same host spawns the %d "+
		"fixtures itself, all at once (a session each: spawn, initialize, tools/list), and the slowest of them is the "+
		"comparison; one cold connect alone is an info figure.", st.n, st.tools, len(st.proxy), st.n)
}

func binaryRows(rep *Report, br *binaryResult) {
	for i, how := range []string{"go build", "go build -trimpath -ldflags \"-s -w\" (make build)"} {
		rep.add(Row{Section: secBinary, Metric: "binary size, " + how,
			Mcpkeep:    fmtBytes(float64(br.size[i])),
			Comparison: "smallest go-sdk server " + fmtBytes(float64(br.sdkSize[i])),
			Ratio:      fmtRatio(float64(br.size[i]), float64(br.sdkSize[i])), Target: "—", Verdict: Info})
	}
	cache := "fresh module cache"
	if !br.fresh {
		cache = "warm module cache (a fresh one failed: " + br.freshErr + ")"
	}
	rep.add(Row{Section: secBinary, Metric: "go run ./cmd/mcpkeep " + br.demoArgs + ": to the first status line / to its end, " + cache,
		Mcpkeep:    fmtDur(br.demo[0].first) + " / " + fmtDur(br.demo[0].total),
		Comparison: "warm cache " + fmtDur(br.demo[1].first) + " / " + fmtDur(br.demo[1].total),
		Ratio:      fmtRatio(ms(br.demo[0].first), ms(br.demo[1].first)), Target: "—", Verdict: Info})
	rep.note(secBinary, "sizes of ./cmd/mcpkeep built as `go build` does and as `make build` does, beside "+
		"internal/benchsuite/cmd/sdkmin (a go-sdk server with one tool over stdio) built the same two ways. The demo: "+
		"`go run ./cmd/mcpkeep %s` in a copy of the module, with GOFLAGS=-mod=mod and GOMODCACHE in a new temporary "+
		"directory (every module downloaded from GOPROXY, every dependency compiled again for its new path; the build "+
		"cache is the user's), from the start of `go run` to the demo's first line on stdout, then the same again on "+
		"the now warm module cache.", br.demoArgs)
}

// ownTarget is the reachable target proposed for the hop's p50: what
// mcpkeep adds above the bare relay, measured beside it.
const ownTarget = 150 * time.Microsecond

// hopReason says where the hop's added latency goes: the proxy's CPU per
// relayed call (its work), and, when that falls short of the added time,
// the waiting, told apart by the legacy protocol's hop.
func hopReason(hr *hopResult, p float64, added time.Duration) string {
	legacy := hr.legacyCalls[1].pct(p) - hr.legacyCalls[0].pct(p)
	r := fmt.Sprintf("the hop adds %s at p%.0f (%s on %s); per relayed call the proxy spends %s of CPU and %.0f allocations "+
		"(%s), the fixture behind it %s of CPU (called directly %s)", fmtDur(added), p, signedDur(legacy), hr.legacyProtocol,
		fmtDur(hr.proxy.cpu), hr.proxy.allocs, fmtBytes(hr.proxy.bytes), fmtDur(hr.proxiedServer.cpu), fmtDur(hr.directServer.cpu))
	if bd, bp := hr.bareCalls[0], hr.bareCalls[1]; len(bp) > 0 {
		floor := bp.pct(p) - bd.pct(p)
		r += fmt.Sprintf(". A process that only copies the bytes (the bare relay row) adds %s here: two more pipe crossings "+
			"and a third process to wake, before any work; mcpkeep's own share is the other %s", signedDur(floor), signedDur(added-floor))
		if p == 50 {
			r += fmt.Sprintf(". The 120 µs target is about that floor on this machine, out of reach for any relay that does "+
				"work; the reachable one proposed (issue 39): mcpkeep's own share, the added p50 less the bare relay's "+
				"measured beside it, ≤ %s (here %s, the blocks' own differences; the hop-by-part row)", fmtDur(ownTarget),
				signedDur(blockDiffs(hr.calls[1], bp, hopBlock).pct(50)))
		}
	}
	return r + ". The work left on the fast path (docs/design.md §24), where the call and its answer are relayed as " +
		"JSON and never decoded, by the goroutine that read the call: the host stream's json.Decoder framing that " +
		"HostStdio keeps for the SDK's semantics, the wake-up of the standby reader it hands the stream to, the call's " +
		"checks, contexts and bridge, the answer's check, and the hand-over of the server's answer from its reader " +
		"(the profile row, by phase)"
}
