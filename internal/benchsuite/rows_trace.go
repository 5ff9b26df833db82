package benchsuite

import (
	"fmt"
	"slices"
	"time"
)

// traceRows are section 7's tracing rows (issue 37, docs/design.md §27).
func traceRows(rep *Report, tr *traceHopResult) {
	direct, base := tr.calls[tvDirect].pct(50), tr.calls[tvBase].pct(50)
	fig := func(i int) string {
		return fmt.Sprintf("p50 %s; in the proxy per call %.1f allocations (%s) / %s CPU",
			fmtDur(tr.calls[i].pct(50)), tr.per[i].allocs, fmtBytes(tr.per[i].bytes), fmtDur(tr.per[i].cpu))
	}
	delta := func(i int) string {
		return fmt.Sprintf("%s p50; %+.1f allocations (%s)", signedDur(tr.calls[i].pct(50)-base),
			tr.per[i].allocs-tr.per[tvBase].allocs, fmtBytes(tr.per[i].bytes-tr.per[tvBase].bytes))
	}
	baseFig := fmt.Sprintf("off, no trace context: p50 %s, %.1f allocations (%s)", fmtDur(base), tr.per[tvBase].allocs, fmtBytes(tr.per[tvBase].bytes))
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("tracing off, host sends no trace context (the code path before tracing): echo through the proxy, %s (n=%d)", tr.protocol, len(tr.calls[tvBase])),
		Mcpkeep: fig(tvBase), Comparison: fmt.Sprintf("direct p50 %s (n=%d)", fmtDur(direct), len(tr.calls[tvDirect])),
		Ratio: signedDur(base-direct) + " added at p50", Target: "— (the baseline)", Verdict: Info})
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("tracing off, host sends a traceparent (passed on to the server): echo through the proxy (n=%d)", len(tr.calls[tvOffTP])),
		Mcpkeep: fig(tvOffTP), Comparison: baseFig, Ratio: delta(tvOffTP), Target: "—", Verdict: Info})
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("tracing on (OTLP/HTTP, sampling 100%%), host sends a traceparent: echo through the proxy (n=%d)", len(tr.calls[tvOn])),
		Mcpkeep: fig(tvOn), Comparison: baseFig, Ratio: delta(tvOn), Target: "—", Verdict: Info})

	lo, hi := slices.Min(tr.baseP50s), slices.Max(tr.baseP50s)
	spread := hi - lo
	diff := tr.calls[tvOffTP].pct(50) - base
	row := Row{Section: secProxy, Metric: "tracing off within noise of before: p50 with a traceparent − p50 of the baseline",
		Mcpkeep:    signedDur(diff),
		Comparison: fmt.Sprintf("the baseline's run-to-run spread: its p50 in each of its %d blocks of %d calls ranges %s to %s", len(tr.baseP50s), tr.block, fmtDur(lo), fmtDur(hi)),
		Ratio:      fmtDur(spread) + " spread", Target: "|difference| ≤ spread"}
	row.Verdict, row.Reason = verdict(absDur(diff) <= spread, fmt.Sprintf("with tracing off a host's traceparent moves the hop's p50 by %s, "+
		"more than the %s its baseline moves from block to block in the same run", signedDur(diff), fmtDur(spread)))
	rep.add(row)

	rep.note(secProxy, "tracing rows (issue 37, docs/design.md §27): on section 7's build, a go-sdk host calls `echo` %d times "+
		"in each of four ways, in blocks of %d calls whose order rotates each round and reverses every other one, after 50 warm-up "+
		"calls each: directly on a fixture it spawned; through a proxy started without any OTEL_* variable (tracing off), "+
		"its requests without _meta (the baseline); through that same proxy and host session with `_meta.traceparent` "+
		"set; and through a second proxy started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver in this "+
		"process (it keeps the bodies and answers 200; they are decoded only after the calls) and OTEL_TRACES_SAMPLER=always_on, "+
		"with the same traceparent. The baseline is the code path as it was before tracing: `git diff fdaab15 -- "+
		"proxy/fast.go proxy/tools.go call_raw.go` adds, on a fast call without trace context and no tracer, a nil check of "+
		"the _meta's trace fields (read by the same parse of _meta; fastReq one pointer larger), traceFast returning the context unchanged and a no-op "+
		"end (WithTrace keeps ctx when there is neither context nor tracer), TraceFrom's and traceOf's context lookups that "+
		"find nothing, and an IsZero check in the raw params: no allocation and no extra work on the wire (the diff's other "+
		"hunks come from other changes merged since, not from tracing). Before tracing a host's traceparent was dropped, so "+
		"the traceparent row's difference is the whole cost of passing it on with tracing off. Allocations and CPU per call "+
		"are read from each proxy's probe around %d more calls of each proxy variant. The traced proxy exported %d OTLP/HTTP "+
		"requests carrying %d spans (its flush at exit included). The verdict's rule: tracing off is within noise of before "+
		"when its p50 differs from the baseline's by no more than the range of the baseline's own block p50s measured in "+
		"the same run.", len(tr.calls[tvBase]), tr.block, tr.measured, tr.exports, tr.spans)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
