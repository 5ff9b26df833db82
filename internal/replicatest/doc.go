// Package replicatest starts the real parts the replica tests need
// (docs/design.md §26): Debian's redis-server and haproxy, on loopback
// ports, each bounded and stopped with its test. A part that is not
// installed skips the test saying so, or fails it when
// MCPKEEP_REQUIRE_REPLICAS=1 (CI sets it).
package replicatest
