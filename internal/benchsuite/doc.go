// Package benchsuite is mcpkeep's benchmark suite (issue 9): detection,
// recovery, call overhead, soak, scale and FSM step cost, each measured
// beside its comparison in the same run. `make bench` runs it through
// cmd/benchsuite, which prints the table and writes docs/benchmarks.md.
//
// Every figure is what was measured; a figure that misses its target is
// reported MISSED with the reason the suite found, and the target is never
// adjusted to fit. The real-process sections spawn the program itself as
// the fixture MCP server (internal/fixture's re-exec pattern), so a main
// package using Run must call fixture.RunIfChild first.
//
// The package is internal: it is not part of mcpkeep's API.
package benchsuite
