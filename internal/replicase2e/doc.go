// Package replicase2e holds the replicas test (docs/design.md §26, make
// replicas): a real redis-server and haproxy, three mcpkeep replicas
// (the built binary) behind the balancer round robin with no affinity,
// go-sdk hosts of both eras calling through it, one replica SIGKILLed
// mid-run, and a control run with forwarding off.
package replicase2e
