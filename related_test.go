package mcpkeep

import (
	"context"
	"testing"
)

// TestRelatedCallValue (docs/design.md §19): a server request's context,
// as the host handlers get it, has the value of the one call in flight
// that carries one (calls without it do not count), none when several do
// (CallsInFlight lists them), and its own value first.
func TestRelatedCallValue(t *testing.T) {
	type key struct{}
	g := newGeneration(1)
	req := context.Background()
	if v := g.related(req).Value(key{}); v != nil {
		t.Errorf("no call in flight: Value = %v, want nil", v)
	}
	_, cancelPlain := context.WithCancel(context.Background())
	g.addCall(context.Background(), cancelPlain) // the supervisor's own request: no value
	a, cancelA := context.WithCancel(context.WithValue(context.Background(), key{}, "a"))
	idA, _ := g.addCall(a, cancelA)
	if v := g.related(req).Value(key{}); v != "a" {
		t.Errorf("one carried call in flight: Value = %v, want a", v)
	}
	if v := g.related(context.WithValue(req, key{}, "own")).Value(key{}); v != "own" {
		t.Errorf("the request's own value: Value = %v, want own", v)
	}
	b, cancelB := context.WithCancel(context.WithValue(context.Background(), key{}, "b"))
	g.addCall(b, cancelB)
	rc := g.related(req)
	if v := rc.Value(key{}); v != nil {
		t.Errorf("two carried calls in flight: Value = %v, want nil (ambiguous)", v)
	}
	if n := len(CallsInFlight(rc)); n != 3 {
		t.Errorf("CallsInFlight lists %d calls, want 3", n)
	}
	g.removeCall(idA, cancelA)
	if v := g.related(req).Value(key{}); v != "b" {
		t.Errorf("after a's call ended: Value = %v, want b", v)
	}
	if CallsInFlight(context.Background()) != nil {
		t.Error("CallsInFlight of another context is not nil")
	}
	g.endCalls()
}
