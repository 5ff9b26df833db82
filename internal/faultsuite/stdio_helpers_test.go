package faultsuite

import (
	"context"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
)

// faultWait bounds every wait of the suite.
const faultWait = 15 * time.Second

// quickPolicy retries at once and often: the faults here are the
// server's, and the suite checks what a retry does, not its delay.
var quickPolicy = backoff.Policy{Enabled: true, InitialDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 5}

// fixtureStdio runs the fixture server (internal/fixture) in mode.
func fixtureStdio(mode string) *transport.Stdio {
	path, args, m := fixture.CommandEnv(mode)
	return &transport.Stdio{Command: path, Args: args, Env: m, Server: "fixture",
		StdinGrace: 200 * time.Millisecond, TermGrace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond}
}

// startSupervisor starts a supervisor of opener and disposes of it (within
// faultWait) when the test ends.
func startSupervisor(t *testing.T, opener transport.Opener, tweak func(*mcpkeep.Options)) *mcpkeep.Supervisor {
	t.Helper()
	o := mcpkeep.Options{Name: "srv", Opener: opener, Policy: quickPolicy, ConnectTimeout: 5 * time.Second,
		Sink: tools.NewSet(tools.Limits{})}
	if tweak != nil {
		tweak(&o)
	}
	sup, err := mcpkeep.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), faultWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return sup
}
