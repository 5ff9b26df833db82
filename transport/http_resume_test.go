package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPResumesAStreamTheServerClosed (SEP-1699): a server that answers
// a call with an event stream, sends a priming event and closes the stream
// (to free the connection) expects the client to come back with
// Last-Event-ID after the retry delay and get the answer there. The call
// succeeds, and the generation lives on.
func TestHTTPResumesAStreamTheServerClosed(t *testing.T) {
	web := startWeb(t, false, true)
	c := connectWeb(t, &transport.HTTP{URL: web.URL(), ProbeInterval: time.Hour}, 1)
	web.waitRequest(t, func(r webRequest) bool { return r.Method == http.MethodGet })
	callID := make(chan json.RawMessage, 1)
	web.setHook(func(rw http.ResponseWriter, r *http.Request) bool {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = json.Unmarshal(body, &msg)
		}
		switch {
		case msg.Method == "tools/call":
			callID <- msg.ID
			rw.Header().Set("Content-Type", "text/event-stream")
			rw.WriteHeader(http.StatusOK)
			fmt.Fprint(rw, "id: prime-1\nretry: 10\ndata: \n\n")
			return true // the stream ends here, the answer still owed
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "prime-1":
			id := <-callID
			rw.Header().Set("Content-Type", "text/event-stream")
			rw.WriteHeader(http.StatusOK)
			fmt.Fprintf(rw, "id: prime-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
			return true
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("a call whose stream the server closed after priming: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "resumed" {
		t.Errorf("result %q, want the resumed stream's", got)
	}
	select {
	case <-c.ended:
		t.Errorf("the generation ended: %s", c.g.Exit().Status)
	default:
	}
}
