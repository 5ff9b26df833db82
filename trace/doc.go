// Package trace records a supervisor's lifecycle transitions as JSON lines
// and checks recorded traces against the declared lifecycle (docs/design.md §10).
//
// # Format (version 1)
//
// A trace is UTF-8 text, one JSON object per line; blank lines are
// ignored. The first line is the header:
//
//	{"mcpkeep_trace":1,"server":"files","started":"2026-01-02T15:04:05.123456789Z","clock":"real",
//	 "policy":{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":10,"jitter":0},
//	 "connectTimeoutMs":30000,"terminationWindowMs":10000,"note":"how it was recorded"}
//
// "mcpkeep_trace" is the format version (1). "started" (RFC 3339) is the
// origin of every offset, on the supervisor's clock. "clock" is "real" or
// "mock" (default real): a mock-clock trace is checked without slack.
// "policy" uses the config file's names and milliseconds. A trace of
// several servers (the proxy) leaves "server" empty and adds
// "servers":{"name":{"policy":...,"connectTimeoutMs":...,"terminationWindowMs":...}};
// a server missing from it uses the top-level configuration. "note" is
// free text. Unknown fields are errors.
//
// Every other line is one transition, in the order the supervisor fired it:
//
//	{"t":1503.2,"server":"files","gen":1,"event":"released","from":"lost","to":"backing-off",
//	 "attempt":1,"next_retry_ms":499.98,"detail":{"err":"EOF","guard":"reconnect enabled ∧ budget left"}}
//
// "t" is the offset from "started" in milliseconds; durations ("t",
// "next_retry_ms", the header's *Ms) are decimal milliseconds with up to six
// fraction digits, so nanoseconds round-trip exactly. "event", "from" and
// "to" are the names of docs/design.md §3 (fsm.Event and fsm.State String). "gen"
// is the generation the transition concerns (for retry_due and reconnect
// into connecting: the new one). "attempt" is the number of retries spent
// in the outage after the transition. "next_retry_ms", only on transitions
// into backing-off, is the wait from "t" until the retry is due. "detail"
// holds "err" (the supervisor's error text: failed, closed, released,
// stuck, a manual reconnect, drain_timeout), "cause" ("connect_timeout" on
// a failed attempt that hit the connect timeout) and "guard" (the fsm guard name
// of the row taken, for every (from, event) with several rows, so
// "reconnect enabled ∧ budget spent" and "reconnect disabled" stay
// distinct even though both go lost → exhausted).
//
// No secret is ever written: the header holds the policy and timeouts only
// (no command, env or headers), and "err" is the supervisor's own error
// text, which never includes env values or HTTP headers.
//
// # Writing
//
// NewWriter writes the header; Writer.Write appends an Event. The root
// package's mcpkeep.TraceObserver turns a Supervisor's transitions into
// Events (Subscribe it before Start so the trace starts at gen 1).
//
// # Checking
//
// Check (and Summarize, and Checker one event at a time) replays a trace
// against the declaration: one fresh fsm.Machine per server, started at
// the server's first from-state. For every event it checks that
//
//   - "from" is the state the machine is in, and from --event--> to is a
//     declared row (fsm.Find, with the guard from "detail" or, when absent,
//     from the header's policy); the machine then fires it;
//   - disposed is absorbing: no event of a server follows its disposed;
//   - offsets never decrease, and generations never decrease, change only
//     on entering connecting, and then by exactly one;
//   - 0 ≤ attempt ≤ maxAttempts (I4); attempt grows by one on
//     released → backing-off, drops to 0 on stable and on a manual reconnect
//     from established or exhausted, and is unchanged otherwise; budget
//     spent means attempt = maxAttempts; the released guard agrees with the
//     policy's "enabled";
//   - "next_retry_ms" appears exactly on entering backing-off and lies in
//     the policy's delay for the attempt: [d(n)(1−jitter), d(n)], the lower
//     bound less Slack on a real clock (the wait is measured from the
//     recorded instant, a moment after the timer was armed);
//   - no timer fires early: retry_due not before the retry was due, stable
//     not before the stability window (maxDelay), a connect timeout not
//     before connectTimeout, stuck and drain_timeout not before the
//     termination window, each measured from the recorded entry into the
//     state (real-clock traces allow Slack where the timer is armed a moment
//     before the entry is recorded). Gen 1 enters connecting at Start,
//     which is no transition: its connect timeout is measured from "started".
//
// Errors are *LineError values, "line N: reason", wrapping one of the Err*
// sentinels.
package trace
