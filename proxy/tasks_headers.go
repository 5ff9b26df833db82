package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Routing headers of the tasks methods (docs/design.md §25; SEP-2663 on
// SEP-2243's headers): tasks/get, tasks/update and tasks/cancel carry
// Mcp-Name: <taskId>. The SDK checks Mcp-Method against the body, and
// Mcp-Name only for the methods it knows (tools/call, prompts/get,
// resources/read); a tasks request whose Mcp-Name disagrees with its
// params.taskId is refused here the same way: HTTP 400 with -32020
// (HeaderMismatch). One without Mcp-Name is let through (hosts before
// SEP-2663's routing headers send none).

// taskHeaders wraps the 2026-07-28 handler. It reads the body only of a
// request whose Mcp-Method is a tasks method, at most eraPeekLimit.
func taskHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("Mcp-Name")
		if r.Method != http.MethodPost || name == "" || !isTaskMethod(r.Header.Get("Mcp-Method")) || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, eraPeekLimit+1))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err != nil || len(body) > eraPeekLimit {
			next.ServeHTTP(w, r)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				TaskID *string `json:"taskId"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Params.TaskID == nil || strings.TrimSpace(name) == *msg.Params.TaskID {
			next.ServeHTTP(w, r) // the SDK answers a malformed body
			return
		}
		resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": &jsonrpc.Error{
			Code:    mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId %q", name, *msg.Params.TaskID),
		}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(resp)
	})
}

func isTaskMethod(m string) bool {
	return m == "tasks/get" || m == "tasks/update" || m == "tasks/cancel"
}

type readCloser struct {
	io.Reader
	io.Closer
}
