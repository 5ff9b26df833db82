package mcpkeep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPMalformedAnswerIsASentFailure: over Streamable HTTP, whose
// connection the attempt cannot wrap, a readOnly tool's answer without a
// result is the call's error (ErrMalformedAnswer), at once: not a loss
// held for a replay that would run the tool again (docs/design.md §19).
func TestHTTPMalformedAnswerIsASentFailure(t *testing.T) {
	var ran atomic.Int32
	ms := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	ms.AddTool(&mcp.Tool{Name: "look", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if bytes.Contains(body, []byte("looked")) {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &m)
			body = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `}`) // the result left out
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	defer web.Close()
	defer ms.Sessions()(func(ss *mcp.ServerSession) bool { _ = ss.Close(); return true })
	sup, err := New(Options{Name: "web", Opener: &transport.HTTP{URL: web.URL, Server: "web", ProbeInterval: webProbe},
		Policy: webPolicy, ConnectTimeout: 2 * time.Second, Sink: tools.NewSet(tools.Limits{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	defer func() {
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	}()
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := sup.Call(ctx, "look", nil, nil)
	if !errors.Is(err, transport.ErrMalformedAnswer) || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("call = %v, %v; want ErrMalformedAnswer, not a loss", res, err)
	}
	if took := time.Since(start); took >= time.Second {
		t.Errorf("the call took %v (held for a replay?)", took)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	if n := sup.CallsReplayed(); n != 0 {
		t.Fatalf("%d calls replayed", n)
	}
}
