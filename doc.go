// Package mcpkeep keeps MCP servers connected.
//
// A Supervisor supervises one MCP server: it connects through a
// transport.Opener (one fresh transport and ClientSession per generation),
// sees the loss of a connection at once, reconnects with bounded
// exponential backoff, re-discovers the server's tools and swaps them into a
// tools.Sink atomically, gives up cleanly when the server is really dead,
// never lets two generations' transports (for stdio: processes) overlap,
// and shuts down to quiescence. A Pool runs one Supervisor per server of a
// config.Config and reloads by difference.
//
// # Lifecycle
//
// The lifecycle is the declared state machine of package fsm (DESIGN §3),
// rendered in diagrams/lifecycle.svg and diagrams/lifecycle.mmd:
//
//	connecting ──connected──▶ established ──closed──▶ lost ──released──▶ backing-off ──retry_due──▶ connecting
//	                                                   └──released (budget spent / reconnect disabled), stuck──▶ exhausted
//	any state ──dispose──▶ draining ──drained / drain_timeout──▶ disposed
//
// One goroutine (the loop) owns the machine and all lifecycle state. Attempt
// results, session ends, close signals, timers, tools/list_changed
// notifications, Reconnect and Dispose all reach it as messages carrying
// their generation; a message of a stale generation, or a second failure
// signal of one generation, changes nothing and is counted in Stats.
//
// A generation ends by cancelling its context (so in-flight calls fail at
// once and ClientSession.Close stays bounded), closing its session and
// terminating its transport. Its close barrier completes when all three are
// proven done; only then may the next generation start. A barrier that does
// not complete within the termination window fails closed: the server goes
// to exhausted (stuck) and no other process is started.
//
// # Backoff and budget
//
// Retry n of an outage waits min(initialDelay·2^(n−1), maxDelay), reduced
// by jitter (package backoff). An outage allows maxAttempts retries; a
// connection that stays established for the stability window (= maxDelay)
// resets the budget, so an occasionally crashing server recovers forever
// while a crash loop whose connects briefly succeed still runs out.
//
// # Refinements of the design
//
// Where DESIGN.md is silent, mcpkeep does the following:
//
//   - Start waits until the first attempt settles (established, or failed
//     and backing off) so a healthy server's tools are registered when it
//     returns. With FailOnStartupError a failed first attempt (including a
//     tool-name conflict at the initial sync) makes Start return the error
//     and the supervisor is disposed; it never retries behind the host's
//     back. A server name already reserved in the Sink fails Start always.
//   - A manual Reconnect from established is an operator's restart, not a
//     failure: the budget starts over and the first retry waits d(1).
//   - The stuck path logs "gave up" (error) with err naming the barrier;
//     a failed tools/list or a rejected swap after a list_changed logs
//     "tools sync failed" (warn) and leaves the previous registrations.
//   - Observers run on the loop goroutine, in order: they must be quick and
//     must not call Dispose, Start, Reconnect or a waiting Call.
//   - After a barrier stuck in exhausted, a manual Reconnect still never
//     overlaps: the new attempt waits for the old barrier, and fails by the
//     connect timeout if it never completes.
package mcpkeep
