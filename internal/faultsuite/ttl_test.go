package faultsuite

import (
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// A stateless server that lets clients cache its lists for a minute
// (ttlMs), and offers no subscription stream: only the health probe can
// see it die. The probe must ask the server, not the SDK's TTL cache, so
// the loss is seen within the probe's bounds, not after the TTL.
func TestFaultTTLServerDeathIsSeenByTheProbe(t *testing.T) {
	server := startPBServer(t, pbOptions{stateless: true, ttl: time.Minute, noListen: true})
	const interval = 100 * time.Millisecond
	rig := newPBRig(t, &transport.HTTP{URL: server.url, Server: "pb", ProbeInterval: interval})
	if v := rig.sup.ServerInfo().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol %q; want the sessionless 2026-07-28 era", v)
	}
	rig.mustEcho("up")
	start := time.Now()
	server.kill()
	s := rig.waitState("the loss", func(s mcpkeep.Snapshot) bool { return s.State != fsm.Established })
	d := time.Since(start)
	t.Logf("ttlMs 60000: loss seen %v after the kill (%v)", d, s.LastErr)
	// Two failed probes, each a connection refused at once.
	if bound := 2*interval + 500*time.Millisecond; d > bound {
		t.Errorf("loss seen %v after the kill; want within %v", d, bound)
	}
}
