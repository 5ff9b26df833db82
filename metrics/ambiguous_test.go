package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep"
)

// TestCountAmbiguous: the proxy's count of server requests refused as an
// ambiguous tie between host sessions (docs/design.md §14) is exported as
// mcpkeep_host_requests_ambiguous_total.
func TestCountAmbiguous(t *testing.T) {
	o := New(nil)
	o.CountAmbiguous(func() uint64 { return 3 })
	rec := httptest.NewRecorder()
	o.Handler(func() *mcpkeep.Pool { return nil }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); !strings.Contains(body, "\nmcpkeep_host_requests_ambiguous_total 3\n") {
		t.Errorf("/metrics has no mcpkeep_host_requests_ambiguous_total 3:\n%s", body)
	}
}
