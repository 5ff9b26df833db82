//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server with tasks of its own, relayed (docs/design.md §25), through
// real processes: `proxy --listen` in front of `mcpkeep run --tasks
// always -- fixture` over stdio. The inner mcpkeep keeps the tasks; the
// outer relays them under ids of its own; a SIGKILL of the inner (its
// restart forgets them) makes the outer answer failed, outcome unknown.
func TestRelayedTasksThroughProcesses(t *testing.T) {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	inner := map[string]any{"command": testExe(t), "args": []string{"run", "--tasks", "always", "--cache-dir", t.TempDir(),
		"--env", envCLIChild + "=1", "--env", "GORACE=" + gorace, "--", testExe(t), "fixture", "--mode", "normal"},
		"env": map[string]string{envCLIChild: "1", "GORACE": gorace}}
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"inner": inner, "plain": fixtureServer(t, "normal")}}, nil)
	url := "http://" + r.addr + "/mcp"
	r.stderr.waitFor(t, `"msg":"serving"`)

	// Created, relayed, completed.
	res := modernPost(t, url, "tools/call", "inner__echo", map[string]any{"name": "inner__echo", "arguments": map[string]any{"text": "hi"}})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v", res)
	}
	// Counted on /readyz by the state the server gave (docs/design.md §25).
	if c := outerTasks(t, r); !maps.Equal(c, map[string]int{"working": 1}) {
		t.Fatalf("/readyz tasks %v, want the relayed task working", c)
	}
	done := pollModern(t, url, id, func(st string) bool { return st != "working" })
	if done["status"] != "completed" || done["taskId"] != id || !strings.Contains(fmt.Sprint(done["result"]), "hi") {
		t.Fatalf("finished: %v", done)
	}
	if c := outerTasks(t, r); !maps.Equal(c, map[string]int{"completed": 1}) {
		t.Fatalf("/readyz tasks %v, want the relayed task completed", c)
	}
	if got := modernPost(t, url, "tasks/get", "r-FORGED", map[string]any{"taskId": "r-FORGED"}); got["code"] != float64(-32602) {
		t.Fatalf("forged id: %v, want -32602", got)
	}

	// Working when its server dies: failed, outcome unknown.
	res = modernPost(t, url, "tools/call", "inner__slow", map[string]any{"name": "inner__slow", "arguments": map[string]any{"steps": 1000, "ms": 50}})
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call slow: %v", res)
	}
	pid := innerPid(t, r)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := pollModern(t, url, id, func(st string) bool { return st != "working" })
	er, _ := got["error"].(map[string]any)
	data, _ := er["data"].(map[string]any)
	if got["status"] != "failed" || data["reason"] != "server_lost_outcome_unknown" || got["taskId"] != id {
		t.Fatalf("after the inner mcpkeep was killed: %v", got)
	}
	if ack := modernPost(t, url, "tasks/cancel", id, map[string]any{"taskId": id}); ack["resultType"] != "complete" {
		t.Fatalf("cancel: %v", ack)
	}
	// Both handles were the killed generation's: failed, as tasks/get says.
	if c := outerTasks(t, r); !maps.Equal(c, map[string]int{"failed": 2}) {
		t.Fatalf("/readyz tasks %v, want both relayed tasks failed", c)
	}
}

// outerTasks are the outer proxy's tasks by state (/readyz), without
// zeros: the relayed ones by the state their server last gave.
func outerTasks(t *testing.T, r *listenRun) map[string]int {
	t.Helper()
	c := &http.Client{Timeout: e2eDeadline}
	resp, err := c.Get("http://" + r.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Tasks map[string]int `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for st, n := range rep.Tasks {
		if n > 0 {
			out[st] = n
		}
	}
	return out
}

// innerPid is the pid of the outer proxy's child `mcpkeep run`.
func innerPid(t *testing.T, r *listenRun) int {
	t.Helper()
	outer := r.cmd.(*os.Process).Pid
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", outer))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(s)
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if bytes.Contains(cl, []byte("\x00run\x00--tasks\x00")) {
				return pid
			}
		}
	}
	t.Fatalf("no `mcpkeep run` child of %d", outer)
	return 0
}

// modernPost sends a 2026-07-28 request declaring the tasks extension;
// it returns the result, or the error (its "code").
func modernPost(t *testing.T, url, method, name string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	c := &http.Client{Timeout: e2eDeadline}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an event stream: its first event
		raw = bytes.SplitN(raw[i+len("data: "):], []byte("\n"), 2)[0]
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s: HTTP %d: %v: %s", method, resp.StatusCode, err, raw)
	}
	if msg.Error != nil {
		return msg.Error
	}
	return msg.Result
}

// pollModern polls tasks/get until stop(status), within e2eDeadline.
func pollModern(t *testing.T, url, id string, stop func(string) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for {
		got := modernPost(t, url, "tasks/get", id, map[string]any{"taskId": id})
		if got["code"] != nil {
			t.Fatalf("tasks/get %s: %v", id, got)
		}
		if st, _ := got["status"].(string); stop(st) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: still %v", id, got)
		}
		time.Sleep(20 * time.Millisecond) // a host's poll interval
	}
}
