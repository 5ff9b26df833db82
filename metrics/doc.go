// Package metrics exports mcpkeep's Prometheus metrics: per server state,
// transitions by event, reconnects, outage durations, relayed requests by
// result and their latency, catalog sizes, and the Go and process
// collectors (docs/design.md §16). It is the one package of the module
// that imports the Prometheus client; the library packages (the root
// package and proxy) report through observers and the proxy.Metrics
// interface, which a Registry implements.
package metrics
