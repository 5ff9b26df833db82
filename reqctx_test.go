package mcpkeep

import (
	"context"
	"testing"
)

type reqCtxKey struct{}

// Over a transport whose requests get contexts of their own (Streamable
// HTTP), a request of a caller that can never cancel still gets a context
// that ends when it returns (the SDK reads an answered event stream on it
// to its end), or when the generation ends first; the caller's values
// stay visible.
func TestRequestContextEndsWithTheRequest(t *testing.T) {
	g := newGeneration(1)
	g.ctxReuse.Store(2) // no reuse: the HTTP path
	caller := context.WithValue(context.Background(), reqCtxKey{}, "v")
	sc, ok := g.begin(caller)
	if !ok {
		t.Fatal("begin refused a live generation")
	}
	if sc.ctx.Value(reqCtxKey{}) != "v" {
		t.Error("the request's context lost the caller's value")
	}
	if sc.ctx.Err() != nil {
		t.Fatalf("the request's context ended early: %v", sc.ctx.Err())
	}
	g.end(sc)
	if sc.ctx.Err() == nil {
		t.Error("the request's context outlives the request")
	}

	sc, _ = g.begin(caller)
	g.cancel()
	if sc.ctx.Err() == nil {
		t.Error("the request's context outlives its generation")
	}
	g.end(sc)
}
