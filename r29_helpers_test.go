package mcpkeep

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildTools names tools of server with the default Namer, as a
// supervisor's sync does.
func buildTools(t *testing.T, server string, names []string) []tools.Tool {
	t.Helper()
	list := make([]*mcp.Tool, len(names))
	for i, n := range names {
		list[i] = &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}
	}
	defs, err := tools.Build(server, list, nil, tools.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

// permutations yields every order of s.
func permutations(s []string) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		var rec func(k int) bool
		p := append([]string(nil), s...)
		rec = func(k int) bool {
			if k == len(p) {
				return yield(append([]string(nil), p...))
			}
			for i := k; i < len(p); i++ {
				p[k], p[i] = p[i], p[k]
				if !rec(k + 1) {
					return false
				}
				p[k], p[i] = p[i], p[k]
			}
			return true
		}
		rec(0)
	}
}
