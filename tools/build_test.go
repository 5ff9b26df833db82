package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ptr[T any](v T) *T { return &v }

func TestBuild(t *testing.T) {
	ann := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false), Title: "Read"}
	list := []*mcp.Tool{
		{Name: "z.tool", InputSchema: map[string]any{"type": "object", "b": 1, "a": 2}},
		{Name: "read", Title: "Reader", Description: "reads", Annotations: ann,
			InputSchema:  json.RawMessage(`{ "type" : "object" }`),
			OutputSchema: map[string]any{"type": "string"}},
	}
	got, err := Build("srv", list, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Tool{ // sorted by public name
		{PublicName: "srv__read", Name: "read", Title: "Reader", Description: "reads",
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"string"}`),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false), Title: "Read"}},
		{PublicName: "srv__z_tool_" + hash8("srv\x00z.tool"), Name: "z.tool",
			InputSchema: json.RawMessage(`{"a":2,"b":1,"type":"object"}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
	if got[0].Annotations == ann || got[0].Annotations.OpenWorldHint == ann.OpenWorldHint {
		t.Error("annotations are shared with the input")
	}
}

func TestBuildSchemaDefaults(t *testing.T) {
	got, err := Build("s", []*mcp.Tool{
		{Name: "none"},
		{Name: "nullraw", InputSchema: json.RawMessage("null"), OutputSchema: json.RawMessage(nil)},
	}, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got {
		if string(d.InputSchema) != `{"type":"object"}` || d.OutputSchema != nil {
			t.Errorf("%s: input %s output %v, want the empty object schema and nil", d.Name, d.InputSchema, d.OutputSchema)
		}
	}
}

func TestBuildDeterministicBytes(t *testing.T) {
	schema := func() map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}
	}
	a, _ := Build("s", []*mcp.Tool{{Name: "t", InputSchema: schema()}}, nil, Limits{})
	b, _ := Build("s", []*mcp.Tool{{Name: "t", InputSchema: schema()}}, nil, Limits{})
	if !cmp.Equal(a, b) {
		t.Errorf("two builds differ:\n%s\n%s", a[0].InputSchema, b[0].InputSchema)
	}
}

func TestBuildLimits(t *testing.T) {
	many := make([]*mcp.Tool, 4)
	for i := range many {
		many[i] = &mcp.Tool{Name: string(rune('a' + i))}
	}
	_, err := Build("big", many, nil, Limits{MaxTools: 3})
	var le *LimitError
	if !errors.Is(err, ErrLimit) || !errors.As(err, &le) || le.Server != "big" || le.Limit != LimitMaxTools || le.Max != 3 || le.Got != 4 {
		t.Fatalf("err = %v (%+v), want MaxTools LimitError", err, le)
	}
	if !strings.Contains(err.Error(), `"big"`) || !strings.Contains(err.Error(), "MaxTools (3)") {
		t.Errorf("message %q does not name server and limit", err)
	}
	if _, err := Build("big", many[:3], nil, Limits{MaxTools: 3}); err != nil {
		t.Errorf("at the limit: %v", err)
	}

	huge := json.RawMessage(`{"description":"` + strings.Repeat("x", 100) + `","type":"object"}`)
	for _, tc := range []struct {
		field string
		tool  *mcp.Tool
	}{
		{"inputSchema", &mcp.Tool{Name: "fat", InputSchema: huge}},
		{"outputSchema", &mcp.Tool{Name: "fat", OutputSchema: huge}},
	} {
		_, err := Build("s", []*mcp.Tool{tc.tool}, nil, Limits{MaxSchemaBytes: 100})
		if !errors.As(err, &le) || le.Limit != LimitMaxSchemaBytes || le.Tool != "fat" || le.Field != tc.field || le.Got != len(huge) || le.Max != 100 {
			t.Errorf("%s: err = %v, want a MaxSchemaBytes LimitError for it", tc.field, err)
		}
	}
	if _, err := Build("s", []*mcp.Tool{{Name: "fit", InputSchema: huge}}, nil, Limits{MaxSchemaBytes: len(huge)}); err != nil {
		t.Errorf("schema of exactly MaxSchemaBytes: %v", err)
	}
}

func TestDefaultLimits(t *testing.T) {
	if got := DefaultLimits(); got != (Limits{MaxTools: 1000, MaxSchemaBytes: 256 << 10,
		MaxPrompts: 1000, MaxResources: 10000, MaxTemplates: 1000}) {
		t.Errorf("DefaultLimits = %+v", got)
	}
	if got := (Limits{MaxTools: -1}).resolve(); got != DefaultLimits() {
		t.Errorf("resolve of zero/negative = %+v", got)
	}
}

func TestBuildRejectsNames(t *testing.T) {
	two := []*mcp.Tool{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		name  string
		list  []*mcp.Tool
		namer Namer
		tool  string
	}{
		{"duplicate original", []*mcp.Tool{{Name: "a"}, {Name: "a"}}, nil, "a"},
		{"nil tool", []*mcp.Tool{{Name: "a"}, nil}, nil, ""},
		{"namer returns too few", two, func(string, []string) []string { return []string{"x"} }, ""},
		{"namer returns invalid", two, func(_ string, n []string) []string { return []string{"ok", "no.dots"} }, "b"},
		{"namer returns empty", two, func(_ string, n []string) []string { return []string{"ok", ""} }, "b"},
		{"namer returns duplicate", two, func(_ string, n []string) []string { return []string{"same", "same"} }, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build("srv", tc.list, tc.namer, Limits{})
			var ne *NameError
			if !errors.Is(err, ErrInvalidName) || !errors.As(err, &ne) || ne.Server != "srv" || ne.Tool != tc.tool {
				t.Errorf("err = %v (%+v), want a NameError for server srv tool %q", err, ne, tc.tool)
			}
		})
	}
}

func TestBuildCustomNamer(t *testing.T) {
	var gotServer string
	var gotNames []string
	namer := func(server string, names []string) []string {
		gotServer, gotNames = server, names
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = "x-" + n
		}
		names[0] = "scribbled" // must not affect Build
		return out
	}
	defs, err := Build("srv", []*mcp.Tool{{Name: "b"}, {Name: "a"}}, namer, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if gotServer != "srv" || len(gotNames) != 2 {
		t.Errorf("namer called with %q %q", gotServer, gotNames)
	}
	if defs[0].PublicName != "x-a" || defs[0].Name != "a" || defs[1].PublicName != "x-b" || defs[1].Name != "b" {
		t.Errorf("defs = %+v", defs)
	}
}

func TestBuildMarshalError(t *testing.T) {
	_, err := Build("srv", []*mcp.Tool{{Name: "bad", InputSchema: map[string]any{"f": func() {}}}}, nil, Limits{})
	if err == nil || !strings.Contains(err.Error(), `"srv"`) || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("err = %v, want one naming server and tool", err)
	}
}
