//go:build unix

package mcpkeep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// R30 end to end, real processes and the real clock: a server that never
// completes its handshake is given up on after about the connect timeouts
// plus the backoff delays. Every failed attempt is aborted (SIGTERM to the
// group at once), not torn down with the stdin grace that a serving server
// is given: with the default graces that grace alone cost 2 s per attempt.

const (
	hangConnectTimeout = 500 * time.Millisecond
	// hangGiveUpBound: 6 attempts × 0.5 s + delays 50+100+200+400+800 ms
	// ≈ 4.6 s, plus spawn and teardown; the stdin grace would add 12 s.
	hangGiveUpBound = 7 * time.Second
	// hangWait bounds the wait for exhausted, beyond the old figure (~16 s)
	// so a regression is measured, not just timed out.
	hangWait = 30 * time.Second
)

var hangPolicy = backoff.Policy{Enabled: true, InitialDelay: 50 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: 5}

// The fixture's hang-init mode: reads stdin, never answers initialize
// (it exits when its stdin ends).
func TestStdioHangInitGivesUpInTime(t *testing.T) {
	hangGiveUp(t, func(uint64) *transport.Stdio {
		path, args, env := fixture.CommandEnv("hang-init")
		return &transport.Stdio{Command: path, Args: args, Env: env}
	})
}

// A server that never answers and does not even notice its stdin end (one
// hung in its startup): only a signal ends it, so a teardown that waited
// the stdin grace would pay it in full at every attempt.
func TestStdioHangDeafGivesUpInTime(t *testing.T) {
	hangGiveUp(t, func(uint64) *transport.Stdio {
		return &transport.Stdio{Command: "/bin/sh", Args: []string{"-c", "exec sleep 60"}}
	})
}

// hangGiveUp supervises the server stdio opens (with the default graces)
// until the budget is spent, and checks how long that took.
func hangGiveUp(t *testing.T, stdio func(gen uint64) *transport.Stdio) {
	r := newE2E(t, e2eConfig{
		Mode: e2eModes("hang"),
		Tweak: func(o *Options) {
			o.ConnectTimeout = hangConnectTimeout
			o.Policy = hangPolicy
			o.Opener = &hangOpener{e2eOpener: o.Opener.(*e2eOpener), stdio: stdio}
		},
	})
	t0 := time.Now()
	if err := r.start(); err != nil {
		t.Fatalf("Start (not strict) = %v; want nil", err)
	}
	ex := waitTransWithin(t, r, hangWait, func(tr Transition) bool { return tr.To == fsm.Exhausted })
	took := ex.At.Sub(t0)
	t.Logf("gave up %v after Start (%d attempts, connect timeout %v, delays from %v; bound %v)",
		took, hangPolicy.MaxAttempts+1, hangConnectTimeout, hangPolicy.InitialDelay, hangGiveUpBound)
	if ex.Event != fsm.Released {
		t.Errorf("exhausted by %s; want released (budget spent)", ex.Event)
	}
	if took >= hangGiveUpBound {
		t.Errorf("gave up %v after Start; want < %v (failed attempts must skip the stdin grace)", took, hangGiveUpBound)
	}
	if floor := time.Duration(hangPolicy.MaxAttempts+1) * hangConnectTimeout; took < floor {
		t.Errorf("gave up %v after Start; before %d connect timeouts (%v)", took, hangPolicy.MaxAttempts+1, floor)
	}
	if n := len(r.op.procs.list()); n != hangPolicy.MaxAttempts+1 {
		t.Errorf("%d processes started; want %d", n, hangPolicy.MaxAttempts+1)
	}
	for gen := uint64(1); gen <= uint64(hangPolicy.MaxAttempts+1); gen++ {
		if rec := r.waitLog("connection failed", gen); !strings.Contains(rec.Attrs["err"], ErrConnectTimeout.Error()) {
			t.Errorf("gen %d: connection failed: err = %q; want the connect timeout", gen, rec.Attrs["err"])
		}
	}
	d, err := r.dispose()
	if err != nil {
		t.Errorf("Dispose: %v", err)
	}
	t.Logf("Dispose took %v", d)
	// r's cleanup proves that no process survived and that no two ever
	// lived at once.
}

// waitTransWithin waits up to within for a transition matching pred.
func waitTransWithin(t *testing.T, r *e2e, within time.Duration, pred func(Transition) bool) Transition {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		if tr, ok := r.trans.find(pred); ok {
			return tr
		}
		select {
		case <-r.trans.tick:
		case <-deadline.C:
			t.Fatalf("no such transition within %v (state %+v)", within, r.sup.State())
		}
	}
}

// hangOpener is the rig's opener (it records every process and checks that
// no earlier generation's group is alive at each Open) over a Stdio of the
// test's choosing, with the default graces.
type hangOpener struct {
	*e2eOpener
	stdio func(gen uint64) *transport.Stdio
}

func (o *hangOpener) TerminationWindow() time.Duration { return o.stdio(1).TerminationWindow() }

func (o *hangOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	o.opens.Add(1)
	for _, p := range o.procs.list() {
		if fixture.Alive(p.Pid) || fixture.GroupAlive(p.Pid) {
			o.t.Errorf("gen %d opens while gen %d's process group %d is alive (I1)", gen, p.Gen, p.Pid)
		}
	}
	s := o.stdio(gen)
	s.Logger, s.Server = o.logger, "fx"
	tg, err := s.Open(ctx, gen)
	if err != nil {
		return nil, err
	}
	p, ok := tg.(interface{ Pid() int })
	if !ok {
		o.t.Errorf("stdio generation %T has no Pid() int", tg)
		return tg, nil
	}
	o.procs.add(e2eProc{Gen: gen, Pid: p.Pid(), Mode: o.mode(gen), Opened: time.Now()})
	return tg, nil
}
