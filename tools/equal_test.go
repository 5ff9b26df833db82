package tools

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// toolGen draws tools from small domains so that equal pairs are common.
func toolGen() *rapid.Generator[Tool] {
	small := rapid.SampledFrom([]string{"", "a", "b"})
	raw := rapid.Custom(func(t *rapid.T) json.RawMessage {
		switch rapid.IntRange(0, 3).Draw(t, "raw") {
		case 0:
			return nil
		case 1:
			return json.RawMessage{}
		case 2:
			return json.RawMessage(`{}`)
		}
		return json.RawMessage(`{"x":1}`)
	})
	boolPtr := rapid.Custom(func(t *rapid.T) *bool {
		if rapid.Bool().Draw(t, "nil") {
			return nil
		}
		return ptr(rapid.Bool().Draw(t, "v"))
	})
	ann := rapid.Custom(func(t *rapid.T) *mcp.ToolAnnotations {
		if rapid.Bool().Draw(t, "nil") {
			return nil
		}
		return &mcp.ToolAnnotations{
			DestructiveHint: boolPtr.Draw(t, "d"),
			IdempotentHint:  rapid.Bool().Draw(t, "i"),
			OpenWorldHint:   boolPtr.Draw(t, "o"),
			ReadOnlyHint:    rapid.Bool().Draw(t, "r"),
			Title:           small.Draw(t, "title"),
		}
	})
	return rapid.Custom(func(t *rapid.T) Tool {
		return Tool{
			PublicName:   small.Draw(t, "pub"),
			Name:         small.Draw(t, "name"),
			Title:        small.Draw(t, "title"),
			Description:  small.Draw(t, "desc"),
			InputSchema:  raw.Draw(t, "in"),
			OutputSchema: raw.Draw(t, "out"),
			Annotations:  ann.Draw(t, "ann"),
		}
	})
}

// The hand-written comparison used on the hot path agrees with go-cmp,
// which defines "identical" for Replace; clone preserves it.
func TestEqualMatchesCmp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := toolGen().Draw(t, "a")
		var b Tool
		if rapid.Bool().Draw(t, "independent") {
			b = toolGen().Draw(t, "b")
		} else { // a near copy: one field drawn afresh, so single-field differences are common
			b = a.clone()
			other := toolGen().Draw(t, "other")
			switch rapid.IntRange(0, 6).Draw(t, "field") {
			case 0:
				b.PublicName = other.PublicName
			case 1:
				b.Name = other.Name
			case 2:
				b.Title = other.Title
			case 3:
				b.Description = other.Description
			case 4:
				b.InputSchema = other.InputSchema
			case 5:
				b.OutputSchema = other.OutputSchema
			case 6:
				b.Annotations = other.Annotations
			}
		}
		if got, want := a.equal(&b), cmp.Equal(a, b); got != want {
			t.Fatalf("equal = %v, cmp.Equal = %v for\n%+v\n%+v", got, want, a, b)
		}
		c := a.clone()
		if !a.equal(&c) || !cmp.Equal(a, c) {
			t.Fatalf("clone differs: %+v vs %+v", a, c)
		}
	})
}
