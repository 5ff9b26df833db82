// Package transport opens one fresh connection per generation for the
// mcpkeep supervisor and proves when it is gone (the close barrier).
//
// An Opener yields a Generation: the mcp.Transport to connect with, a Gone
// channel that closes when every resource behind it is released, and
// Terminate, which escalates the teardown (or Abort, for a generation that
// never served: see Aborter). Implementations: stdio (the
// supervisor owns the child and its process group), Streamable HTTP, and a
// scripted in-memory transport with faults for tests.
//
// Stdio owns its server's process (docs/design.md §8). Each generation is a fresh
// exec.Cmd in its own session and process group (so a terminal's Ctrl-C
// reaches mcpkeep, which tears the server down, and not the server, and a
// server that opens /dev/tty fails at once instead of hanging), with
// only the base environment (BaseEnv) plus its Env unless InheritEnv, stdin,
// stdout and stderr on os.Pipes, read and written through Lines (MCP's
// line framing without the SDK's reader goroutine and extra decoding pass,
// the envelope decoded by DecodeEnvelope: docs/design.md §24);
// mcp.CommandTransport is not used
// because it sees an exit only as stdout EOF, which a grandchild (npx, uvx,
// a shell wrapper) holding stdout delays indefinitely, and it signals only
// the direct child. A goroutine of mcpkeep waits for the child's exit
// without reaping it (Linux: waitid with WNOWAIT; macOS: kqueue NOTE_EXIT,
// with the process table as a safety net); the moment it exits, its status
// is recorded and reads of stdout stop waiting for writers: what the child
// wrote is still delivered, then the SDK sees EOF (about a millisecond
// later, even with a grandchild holding the pipe). The child stays a zombie
// until the teardown is done with its group, so the group's id, which is
// the child's pid, stays reserved: a process group id is free for reuse
// once its group is empty, and the leader's zombie keeps it from being
// empty. Only then is the child reaped, and its group is never signalled
// after that. (On other unix systems the child is reaped as it exits, and
// its group is signalled only while the child runs.) Teardown starts on Terminate, Abort
// or the child's own exit: close stdin, StdinGrace, SIGTERM to the group,
// TermGrace, SIGKILL to the group, KillGrace. Abort, for a generation that
// never completed its handshake, skips the stdin grace or cuts it short.
// Gone closes once the child has exited, no live process is left in its
// group, and the child was reaped (polled: the OS has no event for an empty
// group; a zombie member counts as gone, since init may reap orphans only
// every few seconds, and the leader is one by design). A group that never
// empties leaves Gone open, and every descriptor is released within
// TerminationWindow; the group is then watched at a slow, growing interval
// with its leader pinned, and Gone closes once it empties. As PID 1 (or a
// child subreaper), StartReaper reaps the orphans servers leave, never a
// live generation's leader.
// Processes that leave the group (setsid, as some npx children do) are out
// of reach. The last stderr lines are kept for Exit().StderrTail and
// forwarded at Debug.
//
// HTTP supervision (docs/design.md §8). Each generation is a fresh
// mcp.StreamableClientTransport behind an http.RoundTripper of its own (and,
// unless the host supplies a client, an http.Transport of its own) that adds
// the configured headers, ties every request to the generation and watches
// the event streams. The SDK's connection is not wrapped (the SDK drives it
// through an unexported interface); Terminate closes it (the SDK's DELETE,
// bounded at 5 s), aborts whatever is still in flight, and Gone closes once
// every request has ended and every response body is closed. Legacy
// stateful sessions (up to 2025-11-25, Mcp-Session-Id) report their own
// loss: a request gets 404 (mcp.ErrSessionMissing), or the standalone
// event stream ends and cannot be reopened. A proxy or load balancer that
// cuts the idle standalone stream (nginx, ALB: 60 s; GCP: 30 s) ends the
// stream, not the session: the generation reopens it under the SDK (see
// http_stream.go), so the session, its calls in flight and the budget are
// untouched; a reopening refused or answered 404 ends the generation at
// once, and so do three streams in a row that the server ended within
// 250 ms of opening them. Stateless 2026-07-28 sessions (no session, no
// ping) never report a dead server, so the generation does two things
// itself. It watches its subscriptions/listen stream: if that ends without
// mcpkeep cancelling it, the server dropped the subscription, the
// generation ends at once and the next one subscribes again. It also probes
// every ProbeInterval (15 s; 1 s on loopback), each probe bounded by
// ProbeTimeout (5 s): ping on a legacy session, and on 2026-07-28 a
// tools/list behind a cursor the server never issued, which it answers
// with a short error and which the SDK's TTL cache never holds. A 429, or
// a 503 with Retry-After, is a live server, and the next probe waits at
// least its Retry-After (at most MaxRetryAfter). ProbeFailures (2)
// consecutive failures end the generation. So does a success after a
// failure, unless the subscription stream stayed open throughout, because
// a restarted server may serve other tools. A legacy session whose server
// offers no standalone stream is probed the same way. Measured on loopback, a killed stateful server, or a
// stateless one with a subscription, is seen in about a millisecond; a
// stateless one without a subscription is seen within two probe intervals.
//
// What HTTP supervision cannot see:
//   - a stateful server that hangs, or a network path that silently drops
//     packets, while its TCP connection stays open, until the OS's TCP
//     keepalive gives up;
//   - tool changes of a stateless server without tools.listChanged, until
//     the next reconnect;
//   - a restart that the subscription stream does not reveal, such as a load
//     balancer moving the client to another instance;
//   - the server itself when the SDK answers a probe from its TTL cache,
//     which takes a server that ignores an unknown cursor (against the
//     spec), sets ttlMs > 0, and a TTL longer than 64 probe intervals. Such
//     a probe counts as neither success nor failure;
//   - whether a failed tools/call reached the server. Calls are never
//     replayed.
//
// The relay's pieces (docs/design.md §24): DecodeEnvelope and
// AppendEnvelope decode and encode a JSON-RPC message as the SDK does,
// without its fresh decoder per message; RawConn wraps a connection so a
// relay's requests travel beside the SDK session's, answered as JSON;
// HostStdio is the SDK's IOTransport for the host's side with that
// envelope.
package transport
