package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsRefusesARebindingHost (issue 33 item 17; docs/design.md
// §19): on a loopback listener /metrics, like the probes, refuses a
// request whose Host is not loopback (a DNS-rebinding page cannot read
// it), on the --listen handler and on the ops handler of --metrics-listen;
// a loopback Host gets the metrics.
func TestMetricsRefusesARebindingHost(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "mcpkeep_up 1\n")
	})
	r := newRig(t, Options{}, "a")
	h, err := r.srv.Handler(HTTPOptions{Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	for name, handler := range map[string]http.Handler{"--listen": h, "--metrics-listen": r.srv.OpsHandler(metrics)} {
		hs := httptest.NewServer(handler)
		for host, want := range map[string]int{"evil.example": http.StatusForbidden, "evil.example:80": http.StatusForbidden,
			"localhost": http.StatusOK, hs.Listener.Addr().String(): http.StatusOK} {
			req, err := http.NewRequest("GET", hs.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			res, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("%s: /metrics with Host %s: %d, want %d", name, host, res.StatusCode, want)
			}
			if want == http.StatusForbidden && strings.Contains(string(body), "mcpkeep_up") {
				t.Errorf("%s: /metrics with Host %s showed the metrics", name, host)
			}
		}
		hs.Close()
	}
}
