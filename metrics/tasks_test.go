package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// TestCountTasks: the proxy's tasks by state are exported as
// mcpkeep_tasks{state}, every state present (docs/design.md §25).
func TestCountTasks(t *testing.T) {
	o := New(nil)
	o.CountTasks(func() map[tasks.State]int { return map[tasks.State]int{tasks.Working: 2, tasks.Failed: 1} })
	rec := httptest.NewRecorder()
	o.Handler(func() *mcpkeep.Pool { return nil }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{`mcpkeep_tasks{state="working"} 2`, `mcpkeep_tasks{state="failed"} 1`,
		`mcpkeep_tasks{state="completed"} 0`, `mcpkeep_tasks{state="input_required"} 0`, `mcpkeep_tasks{state="cancelled"} 0`} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics has no %s:\n%s", want, body)
		}
	}
}
