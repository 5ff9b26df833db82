package tools

import (
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchList is a realistic 1,000-tool list: map schemas as the SDK client
// decodes them, annotations, an output schema on some.
func benchList(n int) []*mcp.Tool {
	list := make([]*mcp.Tool, n)
	for i := range list {
		t := &mcp.Tool{
			Name:        fmt.Sprintf("tool_%04d", i),
			Description: "Does thing number " + fmt.Sprint(i) + " to the files it is given.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":  map[string]any{"type": "string", "description": "file path"},
					"limit": map[string]any{"type": "integer"},
				},
				"required": []any{"path"},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%2 == 0, OpenWorldHint: ptr(false)},
		}
		if i%3 == 0 {
			t.OutputSchema = map[string]any{"type": "object"}
		}
		if i%10 == 0 {
			t.Name = fmt.Sprintf("ns.tool %d", i) // hashed
		}
		list[i] = t
	}
	return list
}

// The recovery path: a re-sync that finds the same 1,000 tools.
func BenchmarkReplaceUnchanged1000(b *testing.B) {
	defs, err := Build("srv", benchList(1000), nil, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	s := NewSet(Limits{})
	_ = s.Reserve("srv")
	if err := s.Replace("srv", 0, slices.Clone(defs)); err != nil {
		b.Fatal(err)
	}
	s.Subscribe(func(Change) { b.Fatal("unchanged Replace emitted a change") })
	fresh, _ := Build("srv", benchList(1000), nil, Limits{}) // equal, distinct memory
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Replace("srv", uint64(i+1), fresh); err != nil {
			b.Fatal(err)
		}
	}
}

// The same, with the definitions in reverse order (a host not using Build).
func BenchmarkReplaceUnchanged1000Unsorted(b *testing.B) {
	defs, _ := Build("srv", benchList(1000), nil, Limits{})
	s := NewSet(Limits{})
	_ = s.Reserve("srv")
	_ = s.Replace("srv", 0, defs)
	rev := slices.Clone(defs)
	slices.Reverse(rev)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Replace("srv", uint64(i+1), rev); err != nil {
			b.Fatal(err)
		}
	}
}

// A swap of 1,000 tools for a different 1,000 (alternating two lists).
func BenchmarkReplaceChanged1000(b *testing.B) {
	list := benchList(1000)
	a, _ := Build("srv", list, nil, Limits{})
	list[0] = &mcp.Tool{Name: "other"}
	c, _ := Build("srv", list, nil, Limits{})
	s := NewSet(Limits{})
	_ = s.Reserve("srv")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d := a
		if i%2 == 1 {
			d = c
		}
		if err := s.Replace("srv", uint64(i+1), d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild1000(b *testing.B) {
	list := benchList(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build("srv", list, nil, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublicNames1000(b *testing.B) {
	names := make([]string, 1000)
	for i, t := range benchList(1000) {
		names[i] = t.Name
	}
	b.ReportAllocs()
	for b.Loop() {
		PublicNames("srv", names)
	}
}

func BenchmarkLookup(b *testing.B) {
	defs, _ := Build("srv", benchList(1000), nil, Limits{})
	s := NewSet(Limits{})
	_ = s.Reserve("srv")
	_ = s.Replace("srv", 1, defs)
	name := defs[500].PublicName
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := s.Lookup(name); !ok {
			b.Fatal("not found")
		}
	}
}
