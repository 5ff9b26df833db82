// Package proxy serves supervised MCP servers to MCP hosts: the resilient
// proxy behind `mcpkeep proxy` and `mcpkeep run`, as a library
// (docs/design.md §14–§16, §23).
//
// A Server is built from a config (New) and serves hosts over one
// transport (Serve, for stdio) or over Streamable HTTP to any number of
// host sessions (Handler). Reload applies a changed config by difference;
// Shutdown ends everything, bounded, with no child process left.
//
// The front. The Server is one go-sdk MCP server that declares every
// capability from the start (tools, prompts, resources with subscribe,
// logging, completions, each list with listChanged), because servers
// come and go with other lists. Over stdio it starts the servers at the
// host's first request, in a pool whose clients declare exactly the
// host's sampling, elicitation and roots; over HTTP it starts them at
// once, declaring all three. The host's initialize is answered once the
// servers' first connections settled, bounded by Options.InitWait.
//
// The catalog mirror. Each atomic swap of a server's tools, prompts,
// resources or templates in the pool's registries becomes one batch of
// adds and removes on the front, which the SDK debounces into one
// list_changed; an unchanged relist changes nothing. Tools and prompts
// are named "<server>__<name>" (or by Options.Pool.Namer); resource URIs
// and templates are never renamed.
//
// Routing. tools/call and prompts/get go by public name, resources/read
// and resources/subscribe by URI, completion/complete by its reference,
// all through the pool, which fails fast (or waits) during an outage; a
// failed tool call becomes an isError result that names the server, its
// state and the next retry.
//
// Host links and bridges. A server's request to the host (sampling,
// elicitation, roots) goes to the host session whose request to that
// server is in flight. A legacy host (up to 2025-11-25) is asked by a
// request of the proxy's; a 2026-07-28 host can be asked only inside its
// own request, so the proxy bridges by multi round trip: the host's
// tools/call is answered with the server's question as an input request,
// and the host's next call carries the answer back to the server's call,
// which kept running.
//
// The fast path (docs/design.md §24). On Serve's connection a plain
// tools/call is taken out of the stream before the SDK's server reads it
// and relayed as JSON (Pool.CallRaw); the server's result goes back as it
// came. What the SDK's server would answer otherwise reads on to it, or
// is handed back to it with the call's outcome. Options.TypedRelay turns
// it off; the Streamable HTTP front keeps the typed path.
//
// Tasks (docs/design.md §25). The front offers the tasks extension
// (io.modelcontextprotocol/tasks) for every tool: a host that declared it
// may get a task for a call, then tasks/get, tasks/update, tasks/cancel.
// For a server that has the extension itself (over stdio) the task is the
// server's, relayed under a handle of mcpkeep's naming the server's
// generation (tasks_relay.go); a generation that ended took its tasks
// with it, and they read failed, outcome unknown. For any other server
// mcpkeep keeps the task (tasks.Engine), running the call detached from
// the host's request.
//
// Health and metrics. Health serves /healthz and /readyz; request counts
// leave through the Metrics interface (package metrics implements it
// with Prometheus, which this package does not import).
package proxy
