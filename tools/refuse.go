package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpkeep/mcpkeep/internal/jsonscan"
	"github.com/yosida95/uritemplate/v3"
)

// ErrRefused: an item a host's MCP server (the go-sdk's) could not
// register. Build returns it in a *RefusedError; BuildTools,
// BuildResources and BuildTemplates leave the item out and report it as a
// Refusal instead.
var ErrRefused = errors.New("item refused")

// A Refusal is one listed item left out of what a host sees, and why. The
// rest of its list is registered without it (docs/design.md §19): one bad
// item costs only itself.
type Refusal struct {
	Kind   ListKind // KindTools, KindResources or KindTemplates
	Key    string   // the tool's original name, the resource URI or the URI template
	Reason string   // the rule it breaks
}

func (r Refusal) String() string { return fmt.Sprintf("%s %q: %s", r.Kind.singular(), r.Key, r.Reason) }

// A RefusedError is Build's error for a tool it refuses.
type RefusedError struct {
	Server string
	Refusal
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("tools: server %q %s", e.Server, e.Refusal)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// maxSchemaDepth is the go-sdk's bound on JSON nesting when it reads a
// schema back (its internal json.Unmarshal): AddTool panics on a deeper one.
const maxSchemaDepth = 1000

// checkTool returns why the go-sdk's Server.AddTool would panic on d, or
// "". It mirrors AddTool's checks (go-sdk v1.8.0, server.go): the input
// schema is a JSON object of "type": "object", both schemas read back
// within the nesting bound, and every x-mcp-header annotation of the input
// schema's properties names a primitive-typed property, a valid and
// unique HTTP header. Where the SDK would skip a check (a schema its
// struct decoding does not fit) this one still makes it: it is never
// looser than AddTool.
func checkTool(d *Tool, input any) string {
	if depth, _ := jsonscan.Scan(d.InputSchema); depth > maxSchemaDepth {
		return fmt.Sprintf("inputSchema nests deeper than %d levels", maxSchemaDepth)
	}
	if depth, _ := jsonscan.Scan(d.OutputSchema); depth > maxSchemaDepth {
		return fmt.Sprintf("outputSchema nests deeper than %d levels", maxSchemaDepth)
	}
	// input is the schema d.InputSchema was marshalled from. The SDK
	// client decodes schemas as map[string]any: a string "type" there is
	// what the SDK would read back, and spares a second decode on every
	// sync. Anything else is read back from the bytes, as the SDK does.
	var typ any // the "type" as the SDK reads it back, when not a string of input's
	str, ok := "", false
	if m, isMap := input.(map[string]any); isMap {
		str, ok = m["type"].(string)
	}
	if !ok {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(d.InputSchema, &top); err != nil || top == nil {
			return "inputSchema is not a JSON object"
		}
		if raw, has := top["type"]; has {
			_ = json.Unmarshal(raw, &typ)
		}
		str, ok = typ.(string)
	}
	if !ok || str != "object" {
		if ok {
			typ = str
		}
		t, _ := json.Marshal(typ)
		return fmt.Sprintf(`inputSchema must have "type": "object", got %s`, t)
	}
	// The header walk needs the whole schema decoded: only when an
	// annotation may be there (its key, or an escape that may spell it).
	if bytes.Contains(d.InputSchema, []byte("x-mcp-header")) || bytes.IndexByte(d.InputSchema, '\\') >= 0 {
		var m map[string]any
		if err := json.Unmarshal(d.InputSchema, &m); err != nil {
			return "inputSchema is not a JSON object"
		}
		if err := checkHeaders(m, "", map[string]bool{}); err != "" {
			return "inputSchema: " + err
		}
	}
	return ""
}

// checkHeaders walks the properties of schema (recursively) and checks
// their x-mcp-header annotations as the SDK's validateParamHeaderAnnotations
// does. seen holds the header names met so far, lower-cased.
func checkHeaders(schema map[string]any, prefix string, seen map[string]bool) string {
	props, _ := schema["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		prop, _ := props[name].(map[string]any)
		if prop == nil {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if h, ok := prop["x-mcp-header"]; ok {
			switch typ, _ := prop["type"].(string); typ {
			case "string", "integer", "boolean":
			default:
				return fmt.Sprintf("property %q: x-mcp-header on a property of type %q (only string, integer, boolean)", path, typ)
			}
			header, _ := h.(string)
			if header == "" {
				return fmt.Sprintf("property %q: x-mcp-header must be a non-empty string", path)
			}
			if i := strings.IndexFunc(header, func(r rune) bool { return !isTChar(r) }); i >= 0 {
				return fmt.Sprintf("property %q: x-mcp-header %q is not an HTTP header name", path, header)
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return fmt.Sprintf("property %q: x-mcp-header %q repeats another property's", path, header)
			}
			seen[lower] = true
		}
		if err := checkHeaders(prop, path, seen); err != "" {
			return err
		}
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isTChar: an HTTP token character (RFC 9110 tchar).
func isTChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// checkURI returns why the go-sdk's Server.AddResource would panic on uri
// (url.Parse rejects it), or "".
func checkURI(uri string) string {
	if _, err := url.Parse(uri); err != nil {
		return "not a valid URI: " + unwrapURLError(err).Error()
	}
	return ""
}

// checkTemplate returns why the go-sdk's Server.AddResourceTemplate would
// panic on tmpl (it is not an RFC 6570 template the SDK's parser reads),
// or "".
func checkTemplate(tmpl string) string {
	if _, err := uritemplate.New(tmpl); err != nil {
		return "not a valid RFC 6570 URI template: " + err.Error()
	}
	return ""
}

// unwrapURLError drops url.Error's quoting of the whole URI: the Refusal
// names it already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
