//go:build replicas

package replicase2e

import (
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// TestReplicasBehindHAProxy (docs/design.md §26): three replicas behind
// haproxy round robin with no affinity, hosts of both eras calling
// (short and long calls, a server's sampling request to the host), one
// replica SIGKILLed mid-run. No call is answered wrongly, none hangs,
// no non-hinted call runs twice; before the kill every call is
// answered; after it the legacy hosts of the lost replica get 404 and
// initialize again, and every host is answered again. The control run,
// the same cluster with forwarding off, shows what forwarding prevents.
//
// Two more hosts opt into tasks (tasks_test.go): long record calls as
// tasks, polled through the balancer; each ends completed with its own
// answer, or failed saying the outcome is unknown when its replica died.
func TestReplicasBehindHAProxy(t *testing.T) {
	c := startCluster(t, 3)
	r := newRun(c.front)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A legacy host whose session r1 owns, idle while r1 is killed.
	victim := r.ownedBy(ctx, "r1")
	if victim == nil {
		t.Fatal("no legacy session landed on r1 in 12 initializes through round robin")
	}
	r.hosts(14*time.Second, 5*time.Second, func() { c.kill(1) })
	// Its next call gets the 404 (forwarded to the owner, which is
	// gone), and a new session serves it.
	_, err := victim.CallTool(ctx, &mcp.CallToolParams{Name: "led0__record", Arguments: map[string]any{"id": "victim.1"}})
	_ = victim.Close()
	if err == nil || !is404(err) {
		t.Errorf("the killed replica's legacy session: %v, want the 404 (session not found)", err)
	}
	again, err := r.connect(ctx, legacyEra)
	if err != nil {
		t.Fatalf("initialize again after the 404: %v", err)
	}
	res, err := again.CallTool(ctx, &mcp.CallToolParams{Name: "led0__record", Arguments: map[string]any{"id": "victim.2"}})
	_ = again.Close()
	if err != nil || resultText(res) != "rec:victim.2" {
		t.Errorf("the re-initialized session's call: %v", err)
	} else {
		t.Log("the killed replica's idle legacy session: its next call got the 404, a new session was answered")
	}
	r.client.CloseIdleConnections()
	runs, double := c.doubleRuns()
	t.Logf("%s  non-hinted calls run %d, run twice %d", r.report("forwarding on, replica r1 SIGKILLed at 5 s"), runs, double)
	if double != 0 {
		t.Errorf("%d non-hinted calls ran twice", double)
	}
	for _, era := range []string{legacyEra, modernEra} {
		for ph := range 2 {
			cs := &r.c[era][ph]
			if cs.wrong.Load() != 0 || cs.hung.Load() != 0 {
				t.Errorf("%s phase %d: %d answered wrongly, %d hung", era, ph, cs.wrong.Load(), cs.hung.Load())
			}
			if cs.ok.Load() == 0 {
				t.Errorf("%s phase %d: nothing answered", era, ph)
			}
		}
		if f := r.c[era][0].failed.Load(); f != 0 {
			t.Errorf("%s hosts: %d calls failed before any replica was lost", era, f)
		}
	}
	tc := &r.tasks
	if tc.completed.Load() == 0 || tc.wrong.Load() != 0 || tc.unended.Load() != 0 || tc.failed.Load() != 0 {
		t.Errorf("tasks: %v; want some completed, none wrong, none unended, none failed but for the outcome unknown", tc)
	}
	if !strings.Contains(c.reps[0].log.String()+c.reps[2].log.String(), `"owner":"r1"`) {
		t.Log("no request reached the killed replica's handles through forwarding")
	}
	for _, rp := range c.reps {
		if t.Failed() {
			t.Logf("replica %s log tail:\n%s", rp.id, tail(rp.log.String(), 3000))
		}
	}
}

// TestReplicasControlNoForwarding is the control: the same cluster and
// hosts with forwarding off, no replica lost. Legacy sessions fail as
// soon as a request reaches a replica other than their owner, and a
// multi round trip's continuation is refused there.
func TestReplicasControlNoForwarding(t *testing.T) {
	c := startCluster(t, 3, "--replica-no-forward")
	r := newRun(c.front)
	r.hosts(6*time.Second, 0, nil)
	t.Logf("%s", r.report("forwarding off (control), no replica lost"))
	if r.c[legacyEra][0].failed.Load() == 0 {
		t.Error("no legacy call failed without forwarding: the control shows nothing")
	}
	if w := r.c[legacyEra][0].wrong.Load() + r.c[modernEra][0].wrong.Load(); w != 0 {
		t.Errorf("%d calls answered wrongly", w)
	}
}

// SIGTERM: a replica leaves the membership set at once (the others stop
// forwarding to it), disposes its servers and exits 0.
func TestReplicasSIGTERMLeaves(t *testing.T) {
	c := startCluster(t, 2)
	members := func() map[string]string {
		rc := redis.NewClient(&redis.Options{Addr: c.redis.Addr, DisableIdentity: true})
		defer rc.Close()
		out := map[string]string{}
		keys, err := rc.Keys(context.Background(), "mcpkeep:member:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			out[strings.TrimPrefix(k, "mcpkeep:member:")] = ""
		}
		return out
	}
	if m := members(); len(m) != 2 {
		t.Fatalf("members before: %v", m)
	}
	r := c.reps[1]
	_ = r.proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.proc.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of SIGTERM")
	}
	if code := r.proc.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM; log:\n%s", code, tail(r.log.String(), 2000))
	}
	if m := members(); len(m) != 1 {
		t.Fatalf("members after r1's SIGTERM: %v (its registration would only expire with its TTL)", m)
	}
	if !strings.Contains(r.log.String(), `"msg":"stopped"`) {
		t.Errorf("no orderly stop in the log:\n%s", tail(r.log.String(), 2000))
	}
}

// A store lost after the start is no crash: each replica logs it once,
// reports it on /metrics and serves its own handles only, so a
// 2026-07-28 host (no handle) is served as before.
func TestReplicasStoreLost(t *testing.T) {
	c := startCluster(t, 2)
	r := newRun(c.front)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	modern, err := r.connect(ctx, modernEra)
	if err != nil {
		t.Fatal(err)
	}
	defer modern.Close()
	c.redis.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for _, rp := range c.reps {
		for !strings.Contains(rp.log.String(), "store lost: serving own handles only") {
			if time.Now().After(deadline) {
				t.Fatalf("replica %s: no 'store lost' line within 20 s:\n%s", rp.id, tail(rp.log.String(), 2000))
			}
			select {
			case <-time.After(50 * time.Millisecond): // polling a real process's log, bounded
			case <-rp.proc.Done():
				t.Fatalf("replica %s exited when the store was lost:\n%s", rp.id, tail(rp.log.String(), 2000))
			}
		}
	}
	for i := range 6 {
		id := "lost." + string(rune('a'+i))
		res, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "led1__record", Arguments: map[string]any{"id": id}})
		if err != nil || resultText(res) != "rec:"+id {
			t.Fatalf("2026-07-28 call %d with the store lost: %v", i, err)
		}
	}
	resp, err := r.client.Get("http://" + c.reps[0].addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "\nmcpkeep_store_lost 1\n") || !strings.Contains(string(body), "\nmcpkeep_store_losses_total 1\n") {
		t.Errorf("/metrics does not say the store is lost:\n%s", grepLines(string(body), "mcpkeep_store"))
	}
	for _, rp := range c.reps {
		if n := strings.Count(rp.log.String(), "store lost"); n != 1 {
			t.Errorf("replica %s logged the loss %d times", rp.id, n)
		}
	}
	r.client.CloseIdleConnections()
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
