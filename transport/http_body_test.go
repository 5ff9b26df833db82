package transport_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// endlessCap is where the test's endless bodies give up on their own: far
// past any bound, small enough that a client without one survives it.
const endlessCap = 64 << 20

// writeEndless answers with status and contentType and a body that does
// not end (until endlessCap, or the client hangs up); it counts the bytes
// written in sent.
func writeEndless(w http.ResponseWriter, status int, contentType string, sent *atomic.Int64) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	chunk := []byte("[" + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 1000))
	for sent.Load() < endlessCap {
		n, err := w.Write(chunk)
		sent.Add(int64(n))
		if err != nil {
			return
		}
		chunk = chunk[1:len(chunk):len(chunk)]
		if len(chunk) < 100 {
			chunk = []byte(strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 1000))
		}
	}
}

// A plain application/json answer that never ends fails its request with
// ErrBodyTooLarge once it passed MaxPlainBody, and only that request: the
// session serves the next call.
func TestHTTPEndlessJSONBodyFailsTheRequest(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL()}, 1)
	var sent atomic.Int64
	var once atomic.Bool
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Mcp-Method") != "tools/call" || !once.CompareAndSwap(false, true) {
			return false
		}
		writeEndless(w, http.StatusOK, "application/json", &sent)
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if !errors.Is(err, transport.ErrBodyTooLarge) {
		t.Fatalf("CallTool error = %v; want ErrBodyTooLarge", err)
	}
	if !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "POST "+web.URL()) {
		t.Errorf("error %q does not name the request and the bound", err)
	}
	// Loopback socket buffers hold a few MiB past what the client read.
	if n := sent.Load(); n > transport.MaxPlainBody+16<<20 {
		t.Errorf("the server wrote %d MiB before the client gave up; want about %d MiB", n>>20, transport.MaxPlainBody>>20)
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
	if err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "after" {
		t.Errorf("the next call's result: %+v", res.Content)
	}
}

// An error status's body is read up to MaxErrorBody; the status decides
// as ever, and the generation's last failure names the bound.
func TestHTTPEndlessErrorBodyIsCut(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL()}, 1)
	var sent atomic.Int64
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			return false
		}
		writeEndless(w, http.StatusBadRequest, "application/json", &sent)
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil {
		t.Fatal("CallTool succeeded against a 400")
	}
	if n := sent.Load(); n > 16<<20 {
		t.Errorf("the server wrote %d MiB of an error body before the client gave up", n>>20)
	}
	if st := c.g.Exit().Status; !strings.Contains(st, "64 KiB") || !strings.Contains(st, "400") {
		t.Errorf("Exit().Status = %q; want the cut error body", st)
	}
}

// A notification's answer is not read ahead (the SDK closes it unread):
// one that never ends does not hold the notification.
func TestHTTPEndlessAnswerToANotificationIsNotRead(t *testing.T) {
	web := startWeb(t, true, false)
	c := connectWeb(t, &transport.HTTP{URL: web.URL()}, 1)
	var sent, hits atomic.Int64
	web.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasPrefix(r.Header.Get("Mcp-Method"), "notifications/") {
			return false
		}
		hits.Add(1)
		writeEndless(w, http.StatusOK, "application/json", &sent)
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	if err := c.cs.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1}); err != nil {
		t.Fatalf("NotifyProgress: %v", err)
	}
	if hits.Load() != 1 {
		t.Fatalf("the server saw %d notifications; want 1", hits.Load())
	}
	if n := sent.Load(); n > 16<<20 {
		t.Errorf("the server wrote %d MiB of a notification's answer before the client hung up", n>>20)
	}
}
