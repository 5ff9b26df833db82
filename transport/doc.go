// Package transport opens one fresh connection per generation for the
// mcpkeep supervisor and proves when it is gone (the close barrier).
//
// An Opener yields a Generation: the mcp.Transport to connect with, a Gone
// channel that closes when every resource behind it is released, and
// Terminate, which escalates the teardown. Implementations: stdio (the
// supervisor owns the child and its process group), Streamable HTTP, and a
// scripted in-memory transport with faults for tests.
package transport
