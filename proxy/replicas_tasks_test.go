package proxy

import (
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/mcpkeep/mcpkeep/store"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// Tasks across replicas (docs/design.md §25, §26): a task's id names the
// replica that runs it, so its polls through a round-robin balancer
// reach that replica; its finished result is in the shared store, so it
// is answered after that replica is gone; a task id of a gone replica
// that never finished is unknown, never a hang.
func TestReplicasShareTasks(t *testing.T) {
	kv := store.NewMemory(clock.New(), 0)
	base := Options{Tasks: tasks.Options{Store: &tasks.KVStore{KV: kv, NotFound: store.ErrNotFound}}}
	front, a, b, peers := twoReplicasWith(t, false, base, map[string]map[string]any{
		"a": {"tasks": map[string]any{"mode": "always", "ttlMs": 60000}}})
	u, err := url.Parse(front)
	if err != nil {
		t.Fatal(err)
	}
	lb := httputil.NewSingleHostReverseProxy(u)

	_, res := callTool(t, lb, "a__sleep", map[string]any{"ms": 100}, true)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %s", resultText(res))
	}
	owner, _, err := a.srv.opts.Replicas.Names.Parse(replica.KindTask, id)
	if err != nil || (owner != "ra" && owner != "rb") {
		t.Fatalf("task id %q names no replica (%q, %v)", id, owner, err)
	}
	// Polled through round robin: every poll finds the task, the other
	// replica's forwarded to the owner.
	done := pollTask(t, lb, id)
	if done["status"] != "completed" || !strings.Contains(resultText(done), "slept 100ms") {
		t.Fatalf("finished: %s", resultText(done))
	}
	fwd := a.srv.opts.Replicas.Counts().Forwarded.Load() + b.srv.opts.Replicas.Counts().Forwarded.Load()
	if fwd == 0 {
		t.Errorf("no poll was forwarded to the task's owner %s", owner)
	}

	// The owner gone: the other replica answers the finished task from
	// the shared store.
	other := a
	if owner == "ra" {
		other = b
	}
	peers.mu.Lock()
	delete(peers.m, owner)
	peers.mu.Unlock()
	h, err := other.srv.Handler(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if jcode, got := taskGet(t, h, id); jcode != 0 || got["status"] != "completed" || !strings.Contains(resultText(got), "slept 100ms") {
		t.Fatalf("the finished task asked of %s after its owner left: %d %s", other.srv.opts.Replicas.Names.ID(), jcode, resultText(got))
	}
	// A gone owner's task that is not in the store died with it: failed,
	// saying the outcome is unknown (never unknown to the host that was
	// given the id, never a success); a cancel of it is acknowledged.
	lost := (map[string]*rig{"ra": a, "rb": b})[owner].srv.opts.Replicas.Names.Name(replica.KindTask, "never-finished")
	jcode, got := taskGet(t, h, lost)
	errData, _ := got["error"].(map[string]any)
	if jcode != 0 || got["status"] != "failed" || !strings.Contains(resultText(got), "outcome is unknown") ||
		!strings.Contains(resultText(errData), lostTaskReason) {
		t.Errorf("a gone replica's unfinished task: %d %s, want failed with the outcome unknown", jcode, resultText(got))
	}
	if jcode, _ := modern(t, h, "tasks/cancel", lost, map[string]any{"taskId": lost}, true); jcode != 0 {
		t.Errorf("tasks/cancel of a gone replica's task: error %d, want the ack", jcode)
	}
	// A task id of a live owner that does not know it is still unknown.
	if jcode, _ := taskGet(t, h, other.srv.opts.Replicas.Names.Name(replica.KindTask, "no-such")); jcode != -32602 {
		t.Errorf("an unknown task of a live replica: error %d, want -32602", jcode)
	}
}
