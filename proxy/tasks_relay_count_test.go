package proxy

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// readyzTasks is the tasks line of the Server's /readyz, without zeros.
func readyzTasks(t *testing.T, s *Server) map[string]int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil)
	w := httptest.NewRecorder()
	s.Health().Handler(s.getPool, "").ServeHTTP(w, req)
	var rep Readiness
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for k, n := range rep.Tasks {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// wantCounts checks Server.Tasks (/metrics, mcpkeep status) and /readyz
// agree on want.
func wantCounts(t *testing.T, what string, s *Server, want map[string]int) {
	t.Helper()
	if got := counts(s); !maps.Equal(got, want) {
		t.Fatalf("%s: Server.Tasks %v, want %v", what, got, want)
	}
	if got := readyzTasks(t, s); !maps.Equal(got, want) {
		t.Fatalf("%s: /readyz tasks %v, want %v", what, got, want)
	}
}

// TestRelayTasksCounted: relayed tasks count in the task counts
// (docs/design.md §25), merged into the states, by the state last seen
// from the server: working at the CreateTaskResult, then what each
// tasks/get relayed says; failed once their generation ended; gone at
// their TTL. The outer proxy keeps none of them itself.
func TestRelayTasksCounted(t *testing.T) {
	mock := clock.NewMock()
	rr := newRelayRig(t, modernVersion, 2, nil, Options{Tasks: tasks.Options{Clock: mock}})
	done := rr.relayedTask(t, 1, "inner__a__sleep", map[string]any{"ms": 1})
	hang := rr.relayedTask(t, 1, "inner__a__hang", map[string]any{})
	wantCounts(t, "two created", rr.outer.srv, map[string]int{"working": 2})

	// The inner's engine is on the real clock: its task completes.
	deadline := time.Now().Add(testDeadline)
	for {
		_, got := taskGet(t, rr.h, done)
		if got["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleep task never completed: %s", resultText(got))
		}
		time.Sleep(10 * time.Millisecond) // a host's poll interval
	}
	wantCounts(t, "one seen completed", rr.outer.srv, map[string]int{"working": 1, "completed": 1})

	sup, _ := rr.outer.srv.getPool().Supervisor("inner")
	rr.open.kill(1)
	waitFor(t, "generation 2", func() bool { s := sup.State(); return s.Gen == 2 && s.State == fsm.Established })
	// Before any tasks/get: the handles of generation 1 are failed, as
	// tasks/get of them would say.
	wantCounts(t, "generation ended", rr.outer.srv, map[string]int{"failed": 2})
	if jcode, got := taskGet(t, rr.h, hang); jcode != 0 || got["status"] != "failed" {
		t.Fatalf("lost task: %d %s", jcode, resultText(got))
	}
	wantCounts(t, "after tasks/get", rr.outer.srv, map[string]int{"failed": 2})
	if c := engineCounts(rr.outer.srv); len(c) != 0 {
		t.Fatalf("the outer keeps tasks %v", c)
	}

	mock.Add(60 * time.Second) // the server's ttlMs
	wantCounts(t, "after the TTL", rr.outer.srv, map[string]int{})
	if held, reserved := rr.outer.srv.tasks.relay.size(); held != 0 || reserved != 0 {
		t.Fatalf("after the TTL the table holds %d (%d reserved)", held, reserved)
	}
}
