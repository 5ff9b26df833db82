// Package opstest holds the test helpers that read mcpkeep's health and
// metrics endpoints, shared by the metrics package's tests and the
// command's end-to-end tests.
package opstest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/proxy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Deadline bounds every request of these helpers.
const Deadline = 10 * time.Second

// Get GETs path and returns the status and body.
func Get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// Readyz GETs /readyz and decodes it.
func Readyz(t *testing.T, base string) (int, proxy.Readiness) {
	t.Helper()
	code, body := Get(t, base, "/readyz")
	var rep proxy.Readiness
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if rep.Servers == nil {
		t.Fatalf("/readyz body %q has no servers array", body)
	}
	return code, rep
}

// Scrape GETs /metrics and parses it with the Prometheus text parser.
func Scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := Get(t, base, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// Sample is one metric of a family, its labels as a map.
type Sample struct {
	Labels map[string]string
	M      *dto.Metric
}

// Samples lists the metrics of the family name.
func Samples(fams map[string]*dto.MetricFamily, name string) []Sample {
	var out []Sample
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, Sample{l, m})
		}
	}
	return out
}

// Matches reports whether have holds every label of want.
func Matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
