// Package mcpkeep keeps MCP servers connected.
//
// A Supervisor supervises one MCP server: it connects through a
// transport.Opener (one fresh transport and ClientSession per generation),
// sees the loss of a connection at once, reconnects with bounded
// exponential backoff, re-discovers the server's tools and catalog and
// swaps them in atomically, gives up cleanly when the server is really
// dead, never lets two generations' transports (for stdio: processes)
// overlap, and shuts down to quiescence. A Pool runs one Supervisor per
// server of a config.Config, reloads by difference and routes by public
// name or URI.
//
// Through a Supervisor the host keeps all of MCP (docs/design.md §13):
// tools (Call), prompts, resources and templates (registered in a
// tools.CatalogSink; GetPrompt, ReadResource, Complete, all with Call's
// outage semantics and per-request progress), the session state it set
// up (SubscribeResource, SetLoggingLevel, SetRoots: re-established on
// every new generation before it is reported connected), and what the
// server asks of or tells the host (HostHandlers: sampling, elicitation,
// roots, log messages, resource updates, progress), each bound to the
// generation it came from.
//
// # Lifecycle
//
// The lifecycle is the declared state machine of package fsm
// (docs/design.md §3), rendered in diagrams/lifecycle.svg and
// diagrams/lifecycle.mmd:
//
//	connecting ──connected──▶ established ──closed──▶ lost ──released──▶ backing-off ──retry_due──▶ connecting
//	                                                   └──released (budget spent / reconnect disabled), stuck──▶ exhausted
//	any state ──dispose──▶ draining ──drained / drain_timeout──▶ disposed
//
// One goroutine (the loop) owns the machine and all lifecycle state. Attempt
// results, session ends, close signals, timers, list_changed notifications
// (tools_changed, catalog_changed), Reconnect and Dispose all reach it as
// messages carrying their generation; a message of a stale generation, or
// a second failure signal of one generation, changes nothing and is
// counted in Stats (docs/design.md §6).
//
// A generation ends by cancelling its context (so in-flight requests fail
// at once and ClientSession.Close stays bounded), closing its session and
// terminating its transport. Its close barrier completes when all three are
// proven done; only then may the next generation start. A barrier that does
// not complete within the termination window fails closed: the server goes
// to exhausted (stuck) and no other process is started.
//
// # Backoff and budget
//
// Retry n of an outage waits min(initialDelay·2^(n−1), maxDelay), reduced
// by jitter (package backoff, docs/design.md §5). An outage allows
// maxAttempts retries; a connection that stays established for the
// stability window (= maxDelay) resets the budget, so an occasionally
// crashing server recovers forever while a crash loop whose connects
// briefly succeed still runs out.
//
// # Refinements of the design
//
// Where the lifecycle's declaration is silent, mcpkeep does the following (docs/design.md
// §17 lists them all):
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
//     a failed re-sync or a rejected swap logs "tools sync failed" or
//     "catalog sync failed" (warn) and leaves the previous registrations.
//   - Observers run on the loop goroutine, in order: they must be quick and
//     must not call Dispose, Start, Reconnect or a waiting Call.
//   - After a barrier stuck in exhausted, a manual Reconnect still never
//     overlaps: the new attempt waits for the old barrier, and fails by the
//     connect timeout if it never completes (docs/design.md §6).
//   - The catalog: one catalog_changed event for prompts and resources and
//     one sync queue per generation for every kind; prompts are named like
//     tools, resource URIs and templates never renamed (docs/design.md §3,
//     §6, §9).
//   - Requests: GetPrompt, ReadResource and Complete share Call's path; a
//     prompt or URI the current generation does not list is refused without
//     asking the server (ErrUnknownPrompt, ErrUnknownResource).
//   - Sticky state is re-established inside the connect attempt; a
//     restarted server's refusal of a subscription drops it (logged, and
//     told to HostHandlers.SubscriptionDropped), the established server's
//     refusal is SubscribeResource's error. On protocol 2026-07-28 the
//     level rides on each request's _meta, an unsubscribe only stops
//     passing updates on, and a subscription's acknowledgement is watched
//     (docs/design.md §13).
//   - Host handlers: a generation's client declares exactly the
//     capabilities the host's handlers provide; a stale generation's
//     request is refused with ErrStaleGeneration and never reaches the
//     host; a handler's panic is recovered.
//
// The known limits, most of them of the SDK or of protocol 2026-07-28,
// are listed in docs/design.md §18.
package mcpkeep
