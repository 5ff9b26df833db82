package mcpkeep

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// R1: recovery swaps generations without duplication or leaks and serves
// post-recovery calls.
func TestR1RecoveryServesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Established)
		if diff := cmp.Diff([]string{"srv__echo", "srv__hang"}, h.registered()); diff != "" {
			t.Fatalf("registered (-want +got):\n%s", diff)
		}
		res, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "hi"}, nil)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		h.wantState(fsm.BackingOff)
		if got := h.registered(); len(got) != 2 {
			t.Fatalf("tools must stay registered during the outage, got %v", got)
		}
		h.advance(time.Second)
		h.wantState(fsm.Established)
		if h.sup.State().Gen != 2 {
			t.Fatalf("gen = %d, want 2", h.sup.State().Gen)
		}
		res, err = h.sup.Call(context.Background(), "echo", map[string]any{"text": "again"}, nil)
		if err != nil || res.IsError {
			t.Fatalf("call after recovery: %v %+v", err, res)
		}
		want := []string{
			"connecting -connected-> established",
			"established -closed-> lost",
			"lost -released-> backing-off",
			"backing-off -retry_due-> connecting",
			"connecting -connected-> established",
		}
		if diff := cmp.Diff(want, h.steps()); diff != "" {
			t.Fatalf("transitions (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"connection lost", "reconnecting", "recovered"}, h.messages()); diff != "" {
			t.Fatalf("logs (-want +got):\n%s", diff)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Disposed)
		if got := h.registered(); len(got) != 0 {
			t.Fatalf("disposed with tools %v", got)
		}
	})
}
