package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks through a real server process (docs/design.md §25): the fixture,
// SIGKILLed while a task's call runs. The task engine runs on the real
// clock; every wait has a deadline.

func e2eTaskEngine(t *testing.T) *tasks.Engine {
	t.Helper()
	e, err := tasks.New(tasks.Options{DefaultTTL: time.Hour,
		IsLost: func(err error) bool { return errors.Is(err, ErrConnectionLost) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return e
}

// e2eTaskDone waits for the task's end and returns its record.
func e2eTaskDone(t *testing.T, e *tasks.Engine, id string) tasks.Record {
	t.Helper()
	if done := e.Done(id); done != nil {
		select {
		case <-done:
		case <-time.After(e2eWait):
			t.Fatalf("task %s did not end within %v", id, e2eWait)
		}
	}
	rec, err := e.Get(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A readOnly tool's task survives a SIGKILL of its server: the call is
// re-sent once on the next process, the task stays working meanwhile and
// completes with that one answer.
func TestTaskReadOnlySurvivesSIGKILL(t *testing.T) {
	r := newE2E(t, e2eConfig{})
	r.mustStart()
	e := e2eTaskEngine(t)
	hold := filepath.Join(t.TempDir(), "hold")
	args, _ := json.Marshal(map[string]any{"hold": hold})
	rec, err := e.Create(tasks.Spec{Tool: "meta", Run: func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
		return r.sup.CallRaw(WithReplayNotice(ctx, h.Resending), "meta", args, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture writes the hold file when the call reached it, then blocks.
	var seen fixture.MetaSeen
	deadline := time.Now().Add(e2eWait)
	for {
		b, err := os.ReadFile(hold)
		if err == nil && json.Unmarshal(b, &seen) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the meta call never reached the server")
		}
		time.Sleep(5 * time.Millisecond) // a real process: polled, bounded
	}
	p1 := r.proc(1)
	if seen.PID != p1.Pid {
		t.Fatalf("the call ran on pid %d, not gen 1's %d", seen.PID, p1.Pid)
	}
	if err := syscall.Kill(p1.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := e2eTaskDone(t, e, rec.ID)
	if got.Status != tasks.Completed || got.Error != nil {
		t.Fatalf("task: %s %q %+v, want completed", got.Status, got.StatusMessage, got.Error)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(got.Result, &res); err != nil || res.IsError {
		t.Fatalf("result %s: %v", got.Result, err)
	}
	if n := r.sup.CallsReplayed(); n != 1 {
		t.Fatalf("CallsReplayed = %d, want 1 (one run on the new process)", n)
	}
	if r.proc(2).Pid == p1.Pid {
		t.Fatal("no new process")
	}
}

// A non-hinted tool's task whose server is SIGKILLed mid-call fails with
// the outcome-unknown reason, and the call is never sent again.
func TestTaskNonHintedFailsOnSIGKILL(t *testing.T) {
	r := newE2E(t, e2eConfig{})
	r.mustStart()
	e := e2eTaskEngine(t)
	progressed := make(chan struct{}, 1)
	opts := &CallOptions{Progress: func(*mcp.ProgressNotificationParams) {
		select {
		case progressed <- struct{}{}:
		default:
		}
	}}
	args := json.RawMessage(`{"steps": 1000000, "ms": 10}`)
	rec, err := e.Create(tasks.Spec{Tool: "slow", Run: func(ctx context.Context, h tasks.Hooks) (json.RawMessage, error) {
		return r.sup.CallRaw(WithReplayNotice(ctx, h.Resending), "slow", args, opts)
	}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-progressed: // the server is running the call
	case <-time.After(e2eWait):
		t.Fatal("slow never reported progress")
	}
	p1 := r.proc(1)
	if err := syscall.Kill(p1.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := e2eTaskDone(t, e, rec.ID)
	if got.Status != tasks.Failed || got.StatusMessage != tasks.ReasonOutcomeUnknown {
		t.Fatalf("task: %s %q, want failed, outcome unknown", got.Status, got.StatusMessage)
	}
	if got.Error == nil || !strings.Contains(string(got.Error.Data), "server_lost_outcome_unknown") {
		t.Fatalf("task error %+v", got.Error)
	}
	r.waitEstablished(2)
	r.echo("after") // the new process serves, and was never sent slow again
	if n := r.sup.CallsReplayed(); n != 0 {
		t.Fatalf("CallsReplayed = %d, want 0", n)
	}
	if logs := r.logs.list(); len(logs) > 0 {
		for _, l := range logs {
			if l.Msg == "call replayed" {
				t.Fatal("the call was replayed")
			}
		}
	}
}
