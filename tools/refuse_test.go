package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkPanics reports what the go-sdk's server panics with when add
// registers an item on it, or nil: the ground truth the checks mirror.
func sdkPanics(add func(*mcp.Server)) (p any) {
	s := mcp.NewServer(&mcp.Implementation{Name: "scratch"}, nil)
	defer func() { p = recover() }()
	add(s)
	return nil
}

func noopTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }

func noopRead(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, nil
}

// sdkAddTool registers d as a proxy does (the marshalled schemas as raw
// JSON, the output schema only when present).
func sdkAddTool(d Tool) any {
	mt := &mcp.Tool{Name: d.PublicName, InputSchema: d.InputSchema}
	if len(d.OutputSchema) > 0 {
		mt.OutputSchema = d.OutputSchema
	}
	return sdkPanics(func(s *mcp.Server) { s.AddTool(mt, noopTool) })
}

func nested(n int) json.RawMessage {
	return json.RawMessage(`{"type":"object","x":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
}

func headerProp(typ, header string) map[string]any {
	return map[string]any{"type": typ, "x-mcp-header": header}
}

func objectWith(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

// A tool the SDK's AddTool panics on is left out with its reason; the
// others are built, under the names they have without it.
func TestBuildToolsRefuses(t *testing.T) {
	bad := map[string]string{ // tool name → a word of the reason
		"string_input":  `"type": "object"`,
		"array_input":   "not a JSON object",
		"typeless":      `"type": "object"`,
		"type_list":     `"type": "object"`,
		"deep_input":    "deeper than 1000",
		"deep_output":   "deeper than 1000",
		"header_object": "x-mcp-header",
		"header_bad":    "not an HTTP header name",
		"header_empty":  "non-empty string",
		"header_twice":  "repeats",
		"header_nested": "not an HTTP header name",
	}
	list := []*mcp.Tool{
		{Name: "good", InputSchema: map[string]any{"type": "object"}},
		{Name: "no_schema"},
		{Name: "string_input", InputSchema: map[string]any{"type": "string"}},
		{Name: "array_input", InputSchema: json.RawMessage(`[{"type":"object"}]`)},
		{Name: "typeless", InputSchema: map[string]any{"properties": map[string]any{}}},
		{Name: "type_list", InputSchema: map[string]any{"type": []any{"object", "null"}}},
		{Name: "deep_input", InputSchema: nested(maxSchemaDepth + 1)},
		{Name: "deep_ok", InputSchema: nested(maxSchemaDepth)},
		{Name: "deep_output", OutputSchema: nested(maxSchemaDepth + 1)},
		{Name: "string_output", OutputSchema: map[string]any{"type": "string"}},
		{Name: "header_ok", InputSchema: objectWith(map[string]any{"r": headerProp("string", "X-Region")})},
		{Name: "header_object", InputSchema: objectWith(map[string]any{"r": headerProp("object", "X-Region")})},
		{Name: "header_bad", InputSchema: objectWith(map[string]any{"r": headerProp("string", "X Region")})},
		{Name: "header_empty", InputSchema: objectWith(map[string]any{"r": headerProp("string", "")})},
		{Name: "header_twice", InputSchema: objectWith(map[string]any{
			"a": headerProp("string", "X-Region"), "b": headerProp("integer", "x-region")})},
		{Name: "header_nested", InputSchema: objectWith(map[string]any{
			"o": map[string]any{"type": "object", "properties": map[string]any{"r": headerProp("boolean", "X:Y")}}})},
	}
	defs, refused, err := BuildTools("srv", list, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		if r.Kind != KindTools || !strings.Contains(r.Reason, bad[r.Key]) || bad[r.Key] == "" {
			t.Errorf("refused %+v, want the reason to say %q", r, bad[r.Key])
		}
	}
	if len(refused) != len(bad) {
		t.Errorf("refused %d tools, want %d: %v", len(refused), len(bad), refused)
	}
	all, _, _ := BuildTools("srv", list, nil, Limits{})
	names := PublicNames("srv", toolNames(list))
	for _, d := range defs {
		if bad[d.Name] != "" {
			t.Errorf("tool %q was built", d.Name)
		}
		if want := names[slices.Index(toolNames(list), d.Name)]; d.PublicName != want {
			t.Errorf("tool %q named %q, want %q (the name it has in the full list)", d.Name, d.PublicName, want)
		}
		if p := sdkAddTool(d); p != nil {
			t.Errorf("tool %q built, but the SDK's AddTool panics: %v", d.Name, p)
		}
	}
	if len(defs)+len(refused) != len(list) || len(all) != len(defs) {
		t.Errorf("built %d and refused %d of %d tools", len(defs), len(refused), len(list))
	}

	// The ground truth: the SDK panics on every refused tool.
	for _, tl := range list {
		if bad[tl.Name] == "" {
			continue
		}
		_, err := Build("srv", []*mcp.Tool{tl}, nil, Limits{})
		var re *RefusedError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &re) || re.Server != "srv" || re.Key != tl.Name {
			t.Errorf("Build(%q) err = %v, want a *RefusedError naming server and tool", tl.Name, err)
		}
	}
	for _, d := range unchecked(t, list) {
		if p := sdkAddTool(d); (p != nil) != (bad[d.Name] != "") {
			t.Errorf("tool %q: SDK panic %v, refused %v", d.Name, p, bad[d.Name] != "")
		}
	}
}

// unchecked builds each tool as Build did before it checked them.
func unchecked(t *testing.T, list []*mcp.Tool) []Tool {
	t.Helper()
	names := PublicNames("srv", toolNames(list))
	out := make([]Tool, len(list))
	for i, tl := range list {
		in, err := marshalSchema(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if in == nil {
			in = emptyObjectSchema
		}
		outS, _ := marshalSchema(tl.OutputSchema)
		out[i] = Tool{PublicName: names[i], Name: tl.Name, InputSchema: in, OutputSchema: outS}
	}
	return out
}

func toolNames(list []*mcp.Tool) []string {
	n := make([]string, len(list))
	for i, t := range list {
		n[i] = t.Name
	}
	return n
}

func TestBuildRefusedErrorMessage(t *testing.T) {
	_, err := Build("srv", []*mcp.Tool{{Name: "s", InputSchema: map[string]any{"type": "string"}}}, nil, Limits{})
	want := `tools: server "srv" tool "s": inputSchema must have "type": "object", got "string"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// A resource URI that url.Parse rejects made the proxy's AddResource
// panic; it is left out, the others kept.
func TestBuildResourcesRefusesBadURI(t *testing.T) {
	uris := []string{"file:///data/ok.txt", "file:///data/100%.txt", "%zz", "http://[::1", "a://b", "relative/path", " x", "a://b\x7f"}
	bad := map[string]bool{"file:///data/100%.txt": true, "%zz": true, "http://[::1": true, "a://b\x7f": true}
	list := make([]*mcp.Resource, len(uris))
	for i, u := range uris {
		list[i] = &mcp.Resource{URI: u, Name: fmt.Sprint(i)}
	}
	rs, refused, err := BuildResources("srv", list, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if bad[r.URI] {
			t.Errorf("resource %q was built", r.URI)
		}
		if p := sdkPanics(func(s *mcp.Server) { s.AddResource(r.Def, noopRead) }); p != nil {
			t.Errorf("resource %q built, but the SDK's AddResource panics: %v", r.URI, p)
		}
	}
	for _, r := range refused {
		if !bad[r.Key] || r.Kind != KindResources || !strings.HasPrefix(r.Reason, "not a valid URI: ") {
			t.Errorf("refused %+v", r)
		}
		if p := sdkPanics(func(s *mcp.Server) { s.AddResource(&mcp.Resource{URI: r.Key}, noopRead) }); p == nil {
			t.Errorf("refused %q, but the SDK takes it", r.Key)
		}
	}
	if len(refused) != len(bad) || len(rs)+len(refused) != len(uris) {
		t.Errorf("built %d, refused %v", len(rs), refused)
	}
}

func TestBuildTemplatesRefusesBadTemplate(t *testing.T) {
	tmpls := []string{"file:///{path}", "file:///{path", "a://{x}}", "a://{?q,r}", "a://{+x:3}", "a://{x:0}", "a://{%zz}", "a://{x}/{y*}"}
	bad := map[string]bool{"file:///{path": true, "a://{x}}": true, "a://{x:0}": true, "a://{%zz}": true}
	list := make([]*mcp.ResourceTemplate, len(tmpls))
	for i, u := range tmpls {
		list[i] = &mcp.ResourceTemplate{URITemplate: u, Name: fmt.Sprint(i)}
	}
	ts, refused, err := BuildTemplates("srv", list, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range ts {
		if bad[tm.URITemplate] {
			t.Errorf("template %q was built", tm.URITemplate)
		}
		if p := sdkPanics(func(s *mcp.Server) { s.AddResourceTemplate(tm.Def, noopRead) }); p != nil {
			t.Errorf("template %q built, but the SDK's AddResourceTemplate panics: %v", tm.URITemplate, p)
		}
	}
	for _, r := range refused {
		if !bad[r.Key] || r.Kind != KindTemplates || !strings.HasPrefix(r.Reason, "not a valid RFC 6570 URI template: ") {
			t.Errorf("refused %+v", r)
		}
		if p := sdkPanics(func(s *mcp.Server) { s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.Key}, noopRead) }); p == nil {
			t.Errorf("refused %q, but the SDK takes it", r.Key)
		}
	}
	if len(refused) != len(bad) || len(ts)+len(refused) != len(tmpls) {
		t.Errorf("built %d, refused %v", len(ts), refused)
	}
}
