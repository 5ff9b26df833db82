// Package replicase2e holds the replicas test (docs/design.md §26, make
// replicas): a real redis-server and haproxy, three mcpkeep replicas
// (the built binary) behind the balancer round robin with no affinity,
// go-sdk hosts of both eras calling through it, one replica SIGKILLed
// mid-run, and a control run with forwarding off.
//
// Its tests carry the build tag "replicas" (make replicas): they start
// some twenty processes for about a minute and a half, too much to run
// beside every other package in make test on two cores.
package replicase2e
