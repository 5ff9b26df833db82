package faultsuite

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/transport"
)

// endlessGiveUp is where the test server's endless body stops by itself:
// far past the bound, small enough that a client without one survives.
const endlessGiveUp = 128 << 20

// A server answers a tool call with an application/json body that never
// ends. The call fails with ErrBodyTooLarge once the body passed the bound
// (16 MiB), promptly, as a sent request (no wait for readiness, even with
// WaitForReady), the memory it cost stays bounded, and the server's next
// answers are served on the same generation.
func TestFaultEndlessBody(t *testing.T) {
	_, mcpHandler := httpMCP(t, true)
	var endless atomic.Bool
	var sent atomic.Int64
	srv := httpServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !endless.Load() || r.Header.Get("Mcp-Method") != "tools/call" {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 64<<10))
		for sent.Load() < endlessGiveUp {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	sup := httpSupervisor(t, &transport.HTTP{URL: srv.URL + "/mcp"})
	ctx, cancel := context.WithTimeout(context.Background(), httpWait)
	defer cancel()
	if _, err := httpEcho(ctx, sup, "warm", nil); err != nil {
		t.Fatalf("first call: %v", err)
	}
	gen := sup.State().Gen

	endless.Store(true)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := httpEcho(ctx, sup, "endless", &mcpkeep.CallOptions{WaitForReady: true})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, transport.ErrBodyTooLarge) {
		t.Fatalf("call answered by an endless body: %v; want ErrBodyTooLarge", err)
	}
	if !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "POST "+srv.URL+"/mcp") {
		t.Errorf("error %q does not name the request and the bound", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("server wrote %d MiB; the call allocated %d MiB", sent.Load()>>20, alloc>>20)
	if alloc > 100<<20 {
		t.Errorf("the call allocated %d MiB; want well under 100 MiB", alloc>>20)
	}
	// Loopback socket buffers hold a few MiB past what the client read.
	if n := sent.Load(); n > transport.MaxPlainBody+16<<20 {
		t.Errorf("the server wrote %d MiB before the client gave up", n>>20)
	}

	endless.Store(false)
	if got, err := httpEcho(ctx, sup, "after", nil); err != nil || got != "after" {
		t.Fatalf("the next call: %q, %v", got, err)
	}
	if g := sup.State().Gen; g != gen {
		t.Errorf("generation %d after the endless body; want %d (one request failed, not the session)", g, gen)
	}
}
