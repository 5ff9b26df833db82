package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// emptyObjectSchema stands in for a missing input schema: MCP requires one
// of type object, and a host (the proxy's own go-sdk server among them)
// refuses a tool without it.
var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// Build converts a server's MCP tool list into definitions ready for a
// Sink: it marshals the schemas, applies namer (nil means PublicNames) and
// checks lim (zero fields take defaults).
//
// Schemas are marshalled with encoding/json, which sorts map keys, so the
// same schema yields the same bytes on every sync and an unchanged list
// compares equal. A nil input schema becomes {"type":"object"}; a nil
// output schema stays nil. Meta and Icons are not carried.
//
// The result is sorted by public name, the order a Set keeps, which makes
// an unchanged Replace a straight comparison.
//
// Build rejects (with errors naming the server and tool): more tools than
// MaxTools or a schema larger than MaxSchemaBytes (ErrLimit); a nil tool,
// two tools of one original name, or a namer result that is not one valid,
// unique public name per tool (ErrInvalidName); a schema that does not
// marshal; a tool that BuildTools would refuse (ErrRefused, a
// *RefusedError for the first).
func Build(server string, list []*mcp.Tool, namer Namer, lim Limits) ([]Tool, error) {
	defs, refused, err := BuildTools(server, list, namer, lim)
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		return nil, &RefusedError{Server: server, Refusal: refused[0]}
	}
	return defs, nil
}

// BuildTools is Build for a list that may hold tools a host cannot take:
// a tool the go-sdk's Server.AddTool would panic on (an input schema that
// is not a JSON object of "type": "object", a schema nested deeper than
// the SDK reads, an invalid x-mcp-header annotation; see checkTool) is
// left out of defs and returned in refused, in list order, with the
// reason. Every other failure fails the whole list, as in Build.
//
// Public names are given before refusing, over the whole list, so a tool's
// name does not change when another tool of its server is refused or
// mended.
func BuildTools(server string, list []*mcp.Tool, namer Namer, lim Limits) (defs []Tool, refused []Refusal, _ error) {
	lim = lim.resolve()
	if err := lim.checkCount(server, len(list)); err != nil {
		return nil, nil, err
	}
	if namer == nil {
		namer = PublicNames
	}
	names := make([]string, len(list))
	seen := make(map[string]bool, len(list))
	for i, t := range list {
		if t == nil {
			return nil, nil, &NameError{Server: server, Reason: fmt.Sprintf("tool #%d is nil", i)}
		}
		if seen[t.Name] {
			return nil, nil, &NameError{Server: server, Tool: t.Name, Reason: "listed twice"}
		}
		seen[t.Name] = true
		names[i] = t.Name
	}

	public := namer(server, slices.Clone(names)) // a namer may not scribble on ours
	if len(public) != len(list) {
		return nil, nil, &NameError{Server: server,
			Reason: fmt.Sprintf("namer returned %d names for %d tools", len(public), len(list))}
	}

	defs = make([]Tool, len(list))
	var bad map[string]bool // public names of the tools refused
	for i, t := range list {
		d := Tool{
			PublicName:  public[i],
			Name:        t.Name,
			Title:       t.Title,
			Description: t.Description,
			Annotations: cloneAnnotations(t.Annotations),
		}
		var err error
		if d.InputSchema, err = marshalSchema(t.InputSchema); err != nil {
			return nil, nil, fmt.Errorf("tools: server %q tool %q: inputSchema: %w", server, t.Name, err)
		}
		if d.InputSchema == nil {
			d.InputSchema = slices.Clone(emptyObjectSchema)
		}
		if d.OutputSchema, err = marshalSchema(t.OutputSchema); err != nil {
			return nil, nil, fmt.Errorf("tools: server %q tool %q: outputSchema: %w", server, t.Name, err)
		}
		if err := lim.checkSchemas(server, &d); err != nil {
			return nil, nil, err
		}
		if why := checkTool(&d, t.InputSchema); why != "" {
			refused = append(refused, Refusal{Kind: KindTools, Key: t.Name, Reason: why})
			if bad == nil {
				bad = make(map[string]bool)
			}
			bad[d.PublicName] = true
		}
		defs[i] = d
	}
	slices.SortFunc(defs, byPublicName)
	if err := checkNames(server, defs); err != nil {
		return nil, nil, err
	}
	if bad != nil {
		defs = slices.DeleteFunc(defs, func(d Tool) bool { return bad[d.PublicName] })
	}
	return defs, refused, nil
}

// marshalSchema returns nil for an absent schema (nil, or a JSON null).
func marshalSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) == "null" {
		return nil, err
	}
	return b, nil
}

func byPublicName(a, b Tool) int { return strings.Compare(a.PublicName, b.PublicName) }

// checkNames verifies that defs, sorted by public name, carry valid public
// names, each once.
func checkNames(server string, defs []Tool) error {
	for i := range defs {
		d := &defs[i]
		if !ValidName(d.PublicName) {
			return &NameError{Server: server, Tool: d.Name, Public: d.PublicName,
				Reason: "not 1 to 64 characters of [A-Za-z0-9_-]"}
		}
		if i > 0 && defs[i-1].PublicName == d.PublicName {
			return &NameError{Server: server, Tool: d.Name, Public: d.PublicName,
				Reason: fmt.Sprintf("also given to tool %q", defs[i-1].Name)}
		}
	}
	return nil
}
