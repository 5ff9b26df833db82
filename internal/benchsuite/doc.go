// Package benchsuite is mcpkeep's benchmark suite (issues 9 and 16):
// detection, recovery, call overhead, soak, scale, FSM step cost, the
// proxy hop (with tracing off and on), the stateless HTTP front, its
// relays of progress and sampling, the startup of a proxy of many servers
// and the first call to an idle one, and the binary's size and `go run`
// time, each measured beside its comparison in the same run, and where a
// relay's floor matters, beside a process that only copies bytes (bare.go,
// barehttp.go, lazyrelay.go). Ratios with tight targets come from paired
// samples: interleaved batches or blocks, the median of the pairs' own
// ratios (batches.go). The report gives the CPU time the hypervisor stole
// during the run (steal.go). `make bench` runs it through
// cmd/benchsuite, which prints the table and writes docs/benchmarks.md;
// its -only flag runs some sections (Sections) without writing the file.
// The proxy sections build ./cmd/mcpkeep once per run, with package probe
// added at build time (go build -overlay), so the suite can read the
// proxy's allocations, CPU time and profile.
//
// Every figure is what was measured; a figure that misses its target is
// reported MISSED with the reason the suite found, and the target is never
// adjusted to fit. The real-process sections spawn the program itself as
// the fixture MCP server (internal/fixture's re-exec pattern), so a main
// package using Run must call fixture.RunIfChild first.
//
// The package is internal: it is not part of mcpkeep's API.
package benchsuite
