package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListKind names one of the lists a server offers besides its tools; and
// the tools list, where a Refusal needs to name it.
type ListKind uint8

const (
	KindPrompts ListKind = iota + 1
	KindResources
	KindTemplates
	KindTools // only in a Refusal: tools are a Sink's, not a Catalog's
)

func (k ListKind) String() string {
	switch k {
	case KindPrompts:
		return "prompts"
	case KindResources:
		return "resources"
	case KindTemplates:
		return "resource templates"
	case KindTools:
		return "tools"
	}
	return "ListKind(" + strconv.Itoa(int(k)) + ")"
}

// singular names one item of the kind.
func (k ListKind) singular() string {
	switch k {
	case KindPrompts:
		return "prompt"
	case KindResources:
		return "resource"
	case KindTemplates:
		return "resource template"
	case KindTools:
		return "tool"
	}
	return k.String()
}

// A Prompt is one registered prompt: shown to the host under PublicName
// (named by the tools rule, "<server>__<prompt>"), got from Server under
// Name. Def is the server's definition with its original name; like
// everything a Catalog hands out it is shared: read-only.
type Prompt struct {
	Server     string
	PublicName string
	Name       string
	Def        *mcp.Prompt
	raw        []byte // canonical JSON of Def: what "unchanged" compares
}

// A Resource is one listed resource. Its URI is an identifier that
// appears inside content (resource links, embedded resources), so it is
// never renamed; two servers may list the same URI.
type Resource struct {
	Server string
	URI    string
	Def    *mcp.Resource
	raw    []byte
}

// A Template is one resource template, by its URI template (never
// renamed either).
type Template struct {
	Server      string
	URITemplate string
	Def         *mcp.ResourceTemplate
	raw         []byte
}

// BuildPrompts converts a server's prompt list into registrations: public
// names by namer (nil is PublicNames, the tools rule), sorted by public
// name. It rejects more than MaxPrompts, a nil or repeated prompt, and
// namer results that are not valid and unique.
func BuildPrompts(server string, list []*mcp.Prompt, namer Namer, lim Limits) ([]Prompt, error) {
	lim = lim.resolve()
	if err := lim.checkKind(server, KindPrompts, len(list)); err != nil {
		return nil, err
	}
	if namer == nil {
		namer = PublicNames
	}
	names := make([]string, len(list))
	seen := make(map[string]bool, len(list))
	for i, p := range list {
		if p == nil {
			return nil, &NameError{Server: server, Reason: fmt.Sprintf("prompt #%d is nil", i)}
		}
		if seen[p.Name] {
			return nil, &NameError{Server: server, Tool: p.Name, Reason: "prompt listed twice"}
		}
		seen[p.Name] = true
		names[i] = p.Name
	}
	public := namer(server, slices.Clone(names))
	if len(public) != len(list) {
		return nil, &NameError{Server: server,
			Reason: fmt.Sprintf("namer returned %d names for %d prompts", len(public), len(list))}
	}
	out := make([]Prompt, len(list))
	for i, p := range list {
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("tools: server %q prompt %q: %w", server, p.Name, err)
		}
		out[i] = Prompt{Server: server, PublicName: public[i], Name: p.Name, Def: p, raw: raw}
	}
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.PublicName, b.PublicName) })
	for i := range out {
		if !ValidName(out[i].PublicName) {
			return nil, &NameError{Server: server, Tool: out[i].Name, Public: out[i].PublicName,
				Reason: "not 1 to 64 characters of [A-Za-z0-9_-]"}
		}
		if i > 0 && out[i-1].PublicName == out[i].PublicName {
			return nil, &NameError{Server: server, Tool: out[i].Name, Public: out[i].PublicName,
				Reason: fmt.Sprintf("also given to prompt %q", out[i-1].Name)}
		}
	}
	return out, nil
}

// BuildResources converts a server's resource list, sorted by URI. It
// rejects more than MaxResources, a nil resource, an empty URI and a URI
// listed twice. A resource whose URI does not parse as a URL (url.Parse,
// the go-sdk's check: its AddResource panics on one) is left out and
// returned in refused, with the reason; the rest are built.
func BuildResources(server string, list []*mcp.Resource, lim Limits) (_ []Resource, refused []Refusal, _ error) {
	lim = lim.resolve()
	if err := lim.checkKind(server, KindResources, len(list)); err != nil {
		return nil, nil, err
	}
	out := make([]Resource, 0, len(list))
	for i, r := range list {
		if r == nil || r.URI == "" {
			return nil, nil, &NameError{Server: server, Reason: fmt.Sprintf("resource #%d has no URI", i)}
		}
		if why := checkURI(r.URI); why != "" {
			refused = append(refused, Refusal{Kind: KindResources, Key: r.URI, Reason: why})
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, nil, fmt.Errorf("tools: server %q resource %q: %w", server, r.URI, err)
		}
		out = append(out, Resource{Server: server, URI: r.URI, Def: r, raw: raw})
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	for i := 1; i < len(out); i++ {
		if out[i].URI == out[i-1].URI {
			return nil, nil, &NameError{Server: server, Public: out[i].URI, Reason: "resource URI listed twice"}
		}
	}
	return out, refused, nil
}

// BuildTemplates converts a server's resource templates, sorted by URI
// template, rejecting more than MaxTemplates, a nil or empty template and
// one listed twice. A template the go-sdk cannot parse as RFC 6570 (its
// AddResourceTemplate panics on one) is left out and returned in refused.
func BuildTemplates(server string, list []*mcp.ResourceTemplate, lim Limits) (_ []Template, refused []Refusal, _ error) {
	lim = lim.resolve()
	if err := lim.checkKind(server, KindTemplates, len(list)); err != nil {
		return nil, nil, err
	}
	out := make([]Template, 0, len(list))
	for i, t := range list {
		if t == nil || t.URITemplate == "" {
			return nil, nil, &NameError{Server: server, Reason: fmt.Sprintf("resource template #%d has no URI template", i)}
		}
		if why := checkTemplate(t.URITemplate); why != "" {
			refused = append(refused, Refusal{Kind: KindTemplates, Key: t.URITemplate, Reason: why})
			continue
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, nil, fmt.Errorf("tools: server %q resource template %q: %w", server, t.URITemplate, err)
		}
		out = append(out, Template{Server: server, URITemplate: t.URITemplate, Def: t, raw: raw})
	}
	slices.SortFunc(out, func(a, b Template) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	for i := 1; i < len(out); i++ {
		if out[i].URITemplate == out[i-1].URITemplate {
			return nil, nil, &NameError{Server: server, Public: out[i].URITemplate, Reason: "resource template listed twice"}
		}
	}
	return out, refused, nil
}

// item is what the Catalog needs of each kind's entries.
type item interface {
	Prompt | Resource | Template
}

// key is an entry's identity within its server's list.
func key[T item](v T) string {
	switch x := any(v).(type) {
	case Prompt:
		return x.PublicName
	case Resource:
		return x.URI
	case Template:
		return x.URITemplate
	}
	return ""
}

// canonical returns v's raw JSON, computing it for entries a caller built
// by hand (Build fills it).
func canonical[T item](v *T) []byte {
	switch x := any(v).(type) {
	case *Prompt:
		if x.raw == nil {
			x.raw, _ = json.Marshal(x.Def)
		}
		return x.raw
	case *Resource:
		if x.raw == nil {
			x.raw, _ = json.Marshal(x.Def)
		}
		return x.raw
	case *Template:
		if x.raw == nil {
			x.raw, _ = json.Marshal(x.Def)
		}
		return x.raw
	}
	return nil
}

// sameItems reports whether two lists, both sorted by key, are equal.
func sameItems[T item](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if key(a[i]) != key(b[i]) || !bytes.Equal(canonical(&a[i]), canonical(&b[i])) {
			return false
		}
	}
	return true
}
