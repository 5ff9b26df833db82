package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// split turns one fuzzed string into a list (a newline between items).
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// FuzzBuild: Build and BuildTools never panic, agree, and keep no tool the
// go-sdk's AddTool would panic on; what they build has valid, unique
// public names.
func FuzzBuild(f *testing.F) {
	f.Add("srv", "read\nwrite", []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`), []byte(`{"type":"string"}`))
	f.Add("srv", "a.b\na b\na_b", []byte(`{"type":"string"}`), []byte(``))
	f.Add("s", "h", []byte(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"X-R"},"o":{"type":"object","properties":{"p":{"type":"integer","x-mcp-header":"x-r"}}}}}`), []byte(`null`))
	f.Add("s", "h", []byte(`{"type":"object","properties":{"r":{"type":["string","null"],"x-mcp-header":"X R"}}}`), []byte(`[[[[]]]]`))
	f.Add("s", "x", []byte(`[{"type":"object"}]`), []byte(`{"type":"object"}`))
	f.Add("", "", []byte(`{}`), []byte(`{}`))
	f.Add("s", "t\nt", []byte(`{"type":"object"}`), []byte(``))
	f.Add("s", "a\nb\nc", []byte(`{"type":"object","properties":{"r":{"type":"string","x-mcp-heade\u0072":"X R"}}}`), []byte(``))
	f.Add("s", "a\nb\nc", []byte(`{"type":1,"TYPE":"object"}`), []byte(``))
	f.Fuzz(func(t *testing.T, server, names string, in, out []byte) {
		var list []*mcp.Tool
		for i, n := range split(names) {
			tl := &mcp.Tool{Name: n}
			if i%2 == 0 && json.Valid(in) {
				tl.InputSchema = json.RawMessage(in)
				var decoded any // as the SDK client decodes it
				if i%4 == 2 && json.Unmarshal(in, &decoded) == nil && decoded != nil {
					tl.InputSchema = decoded
				}
			}
			if i%2 == 0 && json.Valid(out) {
				tl.OutputSchema = json.RawMessage(out)
			}
			list = append(list, tl)
		}
		defs, refused, err := BuildTools(server, list, nil, Limits{})
		strict, serr := Build(server, list, nil, Limits{})
		if (err == nil && len(refused) == 0) != (serr == nil) || (serr == nil && !slices.EqualFunc(defs, strict, func(a, b Tool) bool { return a.equal(&b) })) {
			t.Fatalf("Build (%v) and BuildTools (%v, %d refused) disagree", serr, err, len(refused))
		}
		if err != nil {
			return
		}
		if len(defs)+len(refused) != len(list) {
			t.Fatalf("%d built + %d refused of %d", len(defs), len(refused), len(list))
		}
		for i, d := range defs {
			if !ValidName(d.PublicName) || (i > 0 && defs[i-1].PublicName >= d.PublicName) {
				t.Fatalf("public names not valid, sorted and unique: %q", d.PublicName)
			}
			if p := sdkAddTool(d); p != nil {
				t.Fatalf("tool %q built, but the SDK's AddTool panics: %v\n%s", d.Name, p, d.InputSchema)
			}
		}
		for _, r := range refused {
			if r.Kind != KindTools || r.Reason == "" {
				t.Fatalf("refusal %+v", r)
			}
		}
	})
}

// FuzzBuildCatalog: the prompt, resource and template builders never
// panic; a resource or template is refused exactly when the go-sdk's
// AddResource or AddResourceTemplate would panic on it.
func FuzzBuildCatalog(f *testing.F) {
	f.Add("srv", "greet\nsum.up", "file:///data/a.txt\nfile:///data/100%.txt\n%zz", "file:///{path}\nfile:///{path\na://{x:0}")
	f.Add("s", "", "a://b\na://b", "a/{x}\na/{x}")
	f.Add("s", "p\np", "http://[::1\nmailto:x@y", "{+x}{#y}{.z}{/w}{;v}{?u}{&t}")
	f.Fuzz(func(t *testing.T, server, prompts, uris, tmpls string) {
		var pl []*mcp.Prompt
		for _, n := range split(prompts) {
			pl = append(pl, &mcp.Prompt{Name: n})
		}
		if ps, err := BuildPrompts(server, pl, nil, Limits{}); err == nil {
			for i, p := range ps {
				if !ValidName(p.PublicName) || (i > 0 && ps[i-1].PublicName >= p.PublicName) {
					t.Fatalf("prompt names not valid, sorted and unique: %q", p.PublicName)
				}
			}
		}

		var rl []*mcp.Resource
		for _, u := range split(uris) {
			rl = append(rl, &mcp.Resource{URI: u})
		}
		rs, refused, err := BuildResources(server, rl, Limits{})
		if err == nil {
			for _, r := range rs {
				if p := sdkPanics(func(s *mcp.Server) { s.AddResource(r.Def, noopRead) }); p != nil {
					t.Fatalf("resource %q built, but AddResource panics: %v", r.URI, p)
				}
			}
			for _, r := range refused {
				if p := sdkPanics(func(s *mcp.Server) { s.AddResource(&mcp.Resource{URI: r.Key}, noopRead) }); p == nil {
					t.Fatalf("resource %q refused (%s), but AddResource takes it", r.Key, r.Reason)
				}
			}
		}

		var tl []*mcp.ResourceTemplate
		for _, u := range split(tmpls) {
			tl = append(tl, &mcp.ResourceTemplate{URITemplate: u})
		}
		ts, refused, err := BuildTemplates(server, tl, Limits{})
		if err == nil {
			for _, tm := range ts {
				if p := sdkPanics(func(s *mcp.Server) { s.AddResourceTemplate(tm.Def, noopRead) }); p != nil {
					t.Fatalf("template %q built, but AddResourceTemplate panics: %v", tm.URITemplate, p)
				}
			}
			for _, r := range refused {
				if p := sdkPanics(func(s *mcp.Server) { s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.Key}, noopRead) }); p == nil {
					t.Fatalf("template %q refused (%s), but AddResourceTemplate takes it", r.Key, r.Reason)
				}
			}
		}
	})
}

// FuzzPublicNames: PublicNames and OwnNames give valid names of at most 64
// characters, one per input, equal for equal inputs and distinct for
// distinct ones, the same whatever the order and on every call; a name
// that is already valid stays as it is.
func FuzzPublicNames(f *testing.F) {
	f.Add("srv", "read\nwrite")
	f.Add("srv", "a.b\na b\na_b\na_b_"+nameHash("srv", "a.b", 0))
	f.Add("srv", strings.Repeat("x", 70)+"\n"+strings.Repeat("x", 71))
	f.Add("s", "é\nü\n\xff\n")
	f.Add("", "\n\n")
	f.Add("a__b", "c\nb__c")
	f.Fuzz(func(t *testing.T, server, joined string) {
		names := split(joined)
		for _, nm := range []struct {
			name  string
			namer Namer
			clean func(string) string // the name kept when valid, or ""
		}{
			{"PublicNames", PublicNames, func(n string) string { return server + separator + n }},
			{"OwnNames", OwnNames, func(n string) string { return n }},
		} {
			got := nm.namer(server, slices.Clone(names))
			if len(got) != len(names) {
				t.Fatalf("%s: %d names for %d", nm.name, len(got), len(names))
			}
			if again := nm.namer(server, slices.Clone(names)); !slices.Equal(got, again) {
				t.Fatalf("%s: not deterministic: %q, %q", nm.name, got, again)
			}
			rev := slices.Clone(names)
			slices.Reverse(rev)
			gotRev := nm.namer(server, rev)
			byName := map[string]string{}
			owner := map[string]string{}
			for i, n := range names {
				p := got[i]
				if !ValidName(p) || len(p) > MaxNameLen {
					t.Fatalf("%s: %q → invalid %q", nm.name, n, p)
				}
				if c := nm.clean(n); ValidName(c) && p != c {
					t.Fatalf("%s: valid %q renamed %q", nm.name, c, p)
				}
				if prev, ok := byName[n]; ok && prev != p {
					t.Fatalf("%s: %q named %q and %q", nm.name, n, prev, p)
				}
				if o, ok := owner[p]; ok && o != n {
					t.Fatalf("%s: %q and %q both named %q", nm.name, o, n, p)
				}
				byName[n], owner[p] = p, n
				if r := gotRev[len(names)-1-i]; r != p {
					t.Fatalf("%s: %q named %q, or %q in reverse order", nm.name, n, p, r)
				}
			}
		}
	})
}
