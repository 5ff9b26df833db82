package tools

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Tool is one registered tool definition: what a host shows the model
// under PublicName and what it needs to route a call back to the server
// under Name.
//
// Tools handed out by a Set (List, Lookup, Server, Change) share their
// schema bytes and annotations with the Set: treat them as read-only.
type Tool struct {
	PublicName   string
	Name         string // the server's original name
	Title        string
	Description  string
	InputSchema  json.RawMessage // marshalled; compared byte-wise
	OutputSchema json.RawMessage // nil when absent
	Annotations  *mcp.ToolAnnotations
}

// equal reports whether a and b are identical in the sense of go-cmp's
// cmp.Equal (nil and empty schemas differ, annotations compare by value).
// It is hand-written because it runs for every tool of every unchanged
// re-sync, where reflection would dominate the cost; a property test keeps
// it in step with cmp.Equal.
func (a *Tool) equal(b *Tool) bool {
	return a.PublicName == b.PublicName &&
		a.Name == b.Name &&
		a.Title == b.Title &&
		a.Description == b.Description &&
		rawEqual(a.InputSchema, b.InputSchema) &&
		rawEqual(a.OutputSchema, b.OutputSchema) &&
		annotationsEqual(a.Annotations, b.Annotations)
}

func rawEqual(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func annotationsEqual(a, b *mcp.ToolAnnotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	return boolPtrEqual(a.DestructiveHint, b.DestructiveHint) &&
		a.IdempotentHint == b.IdempotentHint &&
		boolPtrEqual(a.OpenWorldHint, b.OpenWorldHint) &&
		a.ReadOnlyHint == b.ReadOnlyHint &&
		a.Title == b.Title
}

func boolPtrEqual(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// clone returns a deep copy, so a Set never shares memory with the slice a
// caller passed to Replace (and may reuse afterwards).
func (a Tool) clone() Tool {
	a.InputSchema = bytes.Clone(a.InputSchema)
	a.OutputSchema = bytes.Clone(a.OutputSchema)
	a.Annotations = cloneAnnotations(a.Annotations)
	return a
}

func cloneAnnotations(a *mcp.ToolAnnotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	c := *a
	c.DestructiveHint = cloneBool(a.DestructiveHint)
	c.OpenWorldHint = cloneBool(a.OpenWorldHint)
	return &c
}

func cloneBool(p *bool) *bool {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
