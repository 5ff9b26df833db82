package proxy

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFastPathModernCallRunsOnItsWorker: a 2026-07-28 host's call is
// relayed on the goroutine that took it, not on a goroutine of its own
// per call (docs/design.md §24, the hop): on a stdio host's stream the
// reader that read it (transport.Diverter), elsewhere the fast path's
// worker; a cancel still reaches the server (the first round then goes
// its way).
func TestFastPathModernCallRunsOnItsWorker(t *testing.T) {
	for _, c := range []struct {
		host      string
		stdio     bool
		on, notOn string
	}{
		{"memory", false, "proxy.(*fastConn).worker(", "transport.(*hostConn).readLoop("},
		{"stdio", true, "transport.(*hostConn).readLoop(", "proxy.(*fastConn).worker("},
	} {
		t.Run(c.host, func(t *testing.T) { testModernCallRunsOn(t, c.stdio, c.on, c.notOn) })
	}
}

func testModernCallRunsOn(t *testing.T, stdio bool, on, notOn string) {
	r, w := fastRigWaiting(t, Options{})
	r.stdio = stdio
	h := newFastHost(r, modernVersion)
	r.waitApplied()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__wait", Arguments: map[string]any{}})
		errc <- err
	}()
	await(t, w.arrived, "the call reached the server")
	if r.srv.fast.served.Load() == 0 {
		t.Fatal("the call did not take the fast path")
	}
	// Its bridge has no id, no timer and no index entry: only an input
	// request of the server's would need them.
	bs := &r.srv.host.bridges
	bs.mu.Lock()
	indexed := len(bs.byID) + len(bs.byServer)
	bs.mu.Unlock()
	if indexed != 0 {
		t.Errorf("a call's bridge is indexed (%d entries) before any input request", indexed)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	relaying := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "mcpkeep.(*Supervisor).CallRaw(") {
			continue
		}
		relaying++
		if !strings.Contains(g, on) || strings.Contains(g, notOn) {
			t.Errorf("the server's call runs off %s:\n%s", on, g)
		}
	}
	if relaying != 1 {
		t.Fatalf("%d goroutines in Supervisor.CallRaw, want 1", relaying)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	await(t, w.cancelled, "the server's handler was cancelled")
	if got, isErr := call(t, h.cs, "files__echo", map[string]any{"text": "after"}); got != "after" || isErr {
		t.Fatalf("after the cancel: %q (error %v)", got, isErr)
	}
}
