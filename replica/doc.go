// Package replica is what lets mcpkeep run as N replicas behind any
// load balancer (docs/design.md §26): owner-named, tagged handles
// (Names) and this replica's place in the membership set (Member).
//
// A handle a host gets back (a legacy session id, a task id) names the
// replica that owns what it stands for, and carries a tag (HMAC-SHA256
// under a key derived from the state key the replicas share) so that a
// host cannot make one up to point another replica's traffic, or a
// forwarding, anywhere: "<replica>~<tag>~<inner>". The sealed
// requestState of a multi round trip names its owner inside its AEAD
// seal (proxy/state.go) instead.
package replica
