package mcpkeep

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server listing a tool, a resource and a template that a host's go-sdk
// server would panic on: each is left out, the rest registered, and each
// is logged once per generation (docs/design.md §19).
func TestSyncRefusesBadItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, "", nil, nil)
		r.f.set(func(f *protoFixture) {
			f.mangle = func(_ string, res mcp.Result) {
				switch x := res.(type) {
				case *mcp.ListToolsResult:
					x.Tools = append(x.Tools, &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "string"}})
				case *mcp.ListResourcesResult:
					x.Resources = append(x.Resources, &mcp.Resource{URI: "file:///data/100%.txt", Name: "bad"})
				case *mcp.ListResourceTemplatesResult:
					x.ResourceTemplates = append(x.ResourceTemplates, &mcp.ResourceTemplate{URITemplate: "docs://{x", Name: "bad"})
				}
			}
		})
		r.mustStart(t)
		_, _, rs, ts := r.catalog()
		if !slices.Equal(rs, initialResources) || !slices.Equal(ts, initialTemplates) {
			t.Fatalf("catalog %q %q, want the good items only", rs, ts)
		}
		if reg := r.registered(); len(reg) == 0 || slices.Contains(reg, "srv__bad") {
			t.Fatalf("tools %q, want the good tools only", reg)
		}
		want := map[string]string{"tools": "bad", "resources": "file:///data/100%.txt", "resource templates": "docs://{x"}
		check := func(n int) {
			t.Helper()
			logs := r.logsNamed("item refused")
			if len(logs) != n {
				t.Fatalf("%d item refused logs, want %d: %v", len(logs), n, logs)
			}
			if got := r.sup.Stats().Refused; got != uint64(n) {
				t.Errorf("Stats().Refused = %d, want %d (mcpkeep_items_refused_total)", got, n)
			}
			for _, l := range logs {
				if l.Attrs["server"] != "srv" || want[l.Attrs["kind"]] != l.Attrs["key"] || l.Attrs["err"] == "" {
					t.Errorf("log %v", l.Attrs)
				}
			}
		}
		check(3)

		// A re-sync lists them again: no new log in this generation.
		r.f.addResource(1, r.f.server(1), "docs://c")
		time.Sleep(20 * time.Millisecond)
		r.settle()
		if _, _, rs, _ := r.catalog(); !slices.Contains(rs, "docs://c") {
			t.Fatalf("resources %q after the change", rs)
		}
		check(3)

		// A new generation logs them again.
		r.crash(t, 1)
		check(6)
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
