package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// An event that reaches a task after it ended (the TTL timer's func or
// Close that found it live an instant before its end; the SPIN model of
// a task shows both, docs/design.md §7) leaves it as it is (T1) and is
// not an error to log: it lost a race the table need not declare.
func TestLateEventAfterTheEnd(t *testing.T) {
	var logs bytes.Buffer
	clk := clock.NewMock()
	e, err := New(Options{Clock: clk, Store: NewMemStore(), DefaultTTL: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	release := make(chan struct{})
	rec, err := e.Create(Spec{Server: "s", Tool: "tool", Run: func(ctx context.Context, _ Hooks) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{"content":[]}`), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	tk := e.live[rec.ID]
	e.mu.Unlock()
	done := e.Done(rec.ID) // nil once the task is no longer live: taken before it can end
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the task never ended")
	}
	for _, ev := range []Event{Expired, Dispose, InputRequested, InputAnswered} {
		if _, err := e.fire(tk, ev, Facts{}, expiredError); err == nil {
			t.Errorf("%s after the end: no error from fire", ev)
		}
	}
	if got, err := e.Get(context.Background(), "", rec.ID); err != nil || got.Status != Completed {
		t.Errorf("after late events: %+v, %v; want completed", got, err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("late events logged as errors:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "late event") {
		t.Errorf("late events not logged at debug:\n%s", logs.String())
	}
}
