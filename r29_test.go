package mcpkeep

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// R29 the owner of a public name is independent of start order.
//
// A public name is "<server>__<tool>", and tool names may hold "__" or
// start with "_". Server "a" with tool "b__c" and server "a__b" with tool
// "c" both want "a__b__c"; so do "a" with "_b__c" and "a_" with "b__c"
// ("a___b__c"). In one Sink the first to register owns the name and the
// other's sync fails, so the owner would depend on which server started
// first. tools.CheckServerName (no "__", no trailing "_") makes the first
// "__" of a public name end the server name: such pairs cannot be
// configured, and for the names that can, every start order yields the
// same owner for every public name.
func TestR29PublicNameOwnerIndependentOfStartOrder(t *testing.T) {
	// Candidate server names, each offering the same tools; the rule picks
	// which of them may be configured.
	candidates := []string{"a", "a__b", "a_", "a_b", "a-b", "_a", "b"}
	toolNames := []string{"b__c", "c", "_b__c", "_x", "b_c", "x.y", "__c"}

	t.Run("the race the rule rules out", func(t *testing.T) {
		// A Set takes any name, so the race shows there: who owns
		// a__b__c is whoever registers first.
		owners := map[string]bool{}
		for _, order := range [][]string{{"a", "a__b"}, {"a__b", "a"}} {
			set := tools.NewSet(tools.Limits{})
			for _, server := range order {
				defs := buildTools(t, server, map[string][]string{"a": {"b__c"}, "a__b": {"c"}}[server])
				if err := set.Reserve(server); err != nil {
					t.Fatal(err)
				}
				err := set.Replace(server, 1, defs)
				if server == order[1] && !errors.Is(err, tools.ErrConflict) {
					t.Fatalf("order %v: second Replace = %v, want ErrConflict", order, err)
				}
			}
			owner, _, ok := set.Lookup("a__b__c")
			if !ok || owner != order[0] {
				t.Fatalf("order %v: a__b__c owned by %q, want the first, %q", order, owner, order[0])
			}
			owners[owner] = true
		}
		if len(owners) != 2 {
			t.Fatalf("owners %v: the race did not show", owners)
		}
	})

	t.Run("such servers cannot be configured", func(t *testing.T) {
		for _, bad := range []string{"a__b", "a_"} {
			_, _, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"`+bad+`":{"command":"y"}}}`), nil)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Path != "mcpServers."+bad || !strings.Contains(err.Error(), tools.ServerNameRule) {
				t.Errorf("config with server %q: %v, want an error at mcpServers.%s stating the rule", bad, err, bad)
			}
			_, err = New(Options{Name: bad, Opener: transport.NewMemory()})
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != "name" || !strings.Contains(err.Error(), tools.ServerNameRule) {
				t.Errorf("New(%q) = %v, want an *OptionError for name stating the rule", bad, err)
			}
		}
	})

	t.Run("every start order, one owner per name", func(t *testing.T) {
		var servers []string
		for _, s := range candidates {
			if tools.ValidServerName(s) {
				servers = append(servers, s)
			}
		}
		defs := map[string][]tools.Tool{}
		for _, s := range servers {
			defs[s] = buildTools(t, s, toolNames)
		}
		// Every public name, and who built it.
		built := map[string]string{}
		for _, s := range servers {
			for _, d := range defs[s] {
				if prev, dup := built[d.PublicName]; dup {
					t.Errorf("%s and %s/%s both build %q", prev, s, d.Name, d.PublicName)
				}
				built[d.PublicName] = s + "/" + d.Name
			}
		}
		orders := 0
		for order := range permutations(servers) {
			orders++
			set := tools.NewSet(tools.Limits{})
			for _, s := range order {
				if err := set.Reserve(s); err != nil {
					t.Fatal(err)
				}
				if err := set.Replace(s, 1, defs[s]); err != nil {
					t.Fatalf("start order %v: %s: %v", order, s, err)
				}
			}
			for public, want := range built {
				server, tool, ok := set.Lookup(public)
				if got := server + "/" + tool.Name; !ok || got != want {
					t.Fatalf("start order %v: Lookup(%q) = %q, %v; want %q", order, public, got, ok, want)
				}
			}
		}
		if orders < 2 {
			t.Fatalf("%d start orders of %v", orders, servers)
		}
	})
}

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
