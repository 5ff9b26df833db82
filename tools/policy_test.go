package tools

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFilterAdmits(t *testing.T) {
	for _, c := range []struct {
		f    Filter
		name string
		want bool
	}{
		{Filter{}, "anything", true},
		{Filter{Allow: []string{"read_*"}}, "read_file", true},
		{Filter{Allow: []string{"read_*"}}, "write_file", false},
		{Filter{Deny: []string{"write_*", "delete"}}, "delete", false},
		{Filter{Deny: []string{"write_*"}}, "read_file", true},
		{Filter{Allow: []string{"*"}, Deny: []string{"rm"}}, "rm", false}, // deny wins
		{Filter{Allow: []string{"[a-c]?"}}, "b1", true},
		{Filter{Allow: []string{"[bad"}}, "x", false}, // a malformed glob matches nothing
	} {
		if got := c.f.Admits(c.name); got != c.want {
			t.Errorf("%+v.Admits(%q) = %v, want %v", c.f, c.name, got, c.want)
		}
	}
	if CheckPattern("[bad") == nil || CheckPattern("ok_*") != nil {
		t.Error("CheckPattern")
	}
}

func mcpTools(names ...string) []*mcp.Tool {
	var out []*mcp.Tool
	for _, n := range names {
		out = append(out, &mcp.Tool{Name: n, Title: "T " + n, Description: "D " + n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

func TestSelectToolsFiltersThenRenames(t *testing.T) {
	p := &Policy{
		Tools: Filter{Allow: []string{"read*", "search", "nothing_*"}, Deny: []string{"read_secret"}},
		Overrides: map[string]Override{
			"search":      {Name: "find", Description: "Find things."},
			"read_file":   {Title: "Read"},
			"read_secret": {Name: "peek"}, // filtered out: the override does nothing
		},
	}
	sel := p.SelectTools(mcpTools("read_file", "read_secret", "search", "write_file"), nil)
	defs, refused, err := BuildTools("fs", sel.Tools, sel.Namer, Limits{})
	if err != nil || len(refused) > 0 || len(sel.Refused) > 0 {
		t.Fatal(err, refused, sel.Refused)
	}
	got := map[string]Tool{}
	for _, d := range defs {
		got[d.PublicName] = d
	}
	if len(got) != 2 {
		t.Fatalf("defs = %+v", defs)
	}
	if d := got["fs__find"]; d.Name != "search" || d.Description != "Find things." || d.Title != "T search" {
		t.Errorf("renamed: %+v", d)
	}
	if d := got["fs__read_file"]; d.Name != "read_file" || d.Title != "Read" || d.Description != "D read_file" {
		t.Errorf("retitled: %+v", d)
	}
	if !slices.Equal(sel.Unmatched, []string{"nothing_*"}) {
		t.Errorf("unmatched = %v", sel.Unmatched)
	}
	if p.AdmitsTool("write_file") || p.AdmitsTool("read_secret") || !p.AdmitsTool("search") {
		t.Error("AdmitsTool")
	}
}

func TestSelectToolsRenameOntoTakenNameIsRefused(t *testing.T) {
	p := &Policy{Overrides: map[string]Override{
		"a": {Name: "b"}, // b is the server's own
		"c": {Name: "d"},
		"e": {Name: "d"}, // d already given to c
		"f": {Name: "a"}, // a was renamed away: free
	}}
	sel := p.SelectTools(mcpTools("a", "b", "c", "e", "f"), nil)
	defs, _, err := BuildTools("s", sel.Tools, sel.Namer, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.PublicName+"="+d.Name)
	}
	if want := []string{"s__a=f", "s__b=b", "s__d=c"}; !slices.Equal(names, want) {
		t.Errorf("exposed %v, want %v", names, want)
	}
	var keys []string
	for _, r := range sel.Refused {
		keys = append(keys, r.Key)
	}
	if !slices.Equal(keys, []string{"a", "e"}) {
		t.Errorf("refused %v", sel.Refused)
	}
}

func TestSelectPrompts(t *testing.T) {
	p := &Policy{Prompts: Filter{Deny: []string{"secret*"}}}
	kept, _ := p.SelectPrompts([]*mcp.Prompt{{Name: "greet"}, {Name: "secret_plan"}})
	if len(kept) != 1 || kept[0].Name != "greet" {
		t.Errorf("kept %v", kept)
	}
	var nilPolicy *Policy
	if all := mcpTools("x"); len(nilPolicy.SelectTools(all, nil).Tools) != 1 || !nilPolicy.AdmitsTool("x") {
		t.Error("a nil policy passes everything")
	}
}
