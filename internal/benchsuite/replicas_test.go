package benchsuite

import (
	"strings"
	"testing"
)

func TestReplicaRows(t *testing.T) {
	rep := &Report{}
	replicaRows(rep, &replicasResult{missing: "haproxy not on PATH (apt-get install -y haproxy)"})
	if len(rep.Rows) != 1 || !strings.Contains(rep.Rows[0].Mcpkeep, "not measured: haproxy") {
		t.Fatalf("rows without haproxy: %+v", rep.Rows)
	}
	rep = &Report{}
	replicaRows(rep, &replicasResult{rate: map[string][2]float64{"2026-07-28": {1000, 900}, legacyProtocol: {1000, 500}},
		failed: map[string][2]int64{"2026-07-28": {0, 2}}})
	if len(rep.Rows) != 2 || rep.Rows[0].Mcpkeep != "900 /s" || rep.Rows[0].Comparison != "1 replica 1000 /s (failed 0)" ||
		!strings.Contains(rep.Rows[0].Metric, "failed 2") || rep.Rows[1].Ratio != fmtRatio(500, 1000) {
		t.Fatalf("rows: %+v", rep.Rows)
	}
}
