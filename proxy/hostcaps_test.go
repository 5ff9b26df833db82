package proxy

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 host declares its capabilities per request; a server on
// 2026-07-28 behind the proxy is told the host's, not every capability
// the proxy's servers were told at Start (docs/design.md §24), so a tool
// that needs one the host lacks refuses with -32021 as it would directly.
// A legacy server (a stdio server shared by many hosts is pinned to the
// legacy era) is told them too, in the request's _meta, where the go-sdk's
// ServerRequest.ClientCapabilities reads them before its session's (the
// suite's server-stateless through run -- server).
func TestServerToldTheHostsCapabilitiesOfTheRequest(t *testing.T) {
	for _, downstream := range []string{modernVersion, legacyVersion} {
		t.Run(downstream, func(t *testing.T) { serverToldTheHostsCapabilities(t, downstream) })
	}
}

func serverToldTheHostsCapabilities(t *testing.T, downstream string) {
	r := newRig(t, Options{}, "files")
	m := r.mems["files"]
	serve := m.Serve
	m.Serve = func(gen uint64, s *mcp.Server) {
		serve(gen, s)
		s.AddTool(&mcp.Tool{Name: "needsampling", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required"}
			}
			return textResult("ran"), nil
		})
	}
	r.downstream = downstream // modern: as a stateless HTTP server speaks; legacy: as a shared stdio server
	hs := r.serveHTTP()
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	without := r.httpHost(hs.URL, modernVersion, nil) // declares roots only
	_, err := without.CallTool(ctx, &mcp.CallToolParams{Name: "files__needsampling", Arguments: map[string]any{}})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("a host without sampling: %v, want -32021 from the server", err)
	}

	with := r.httpHost(hs.URL, modernVersion, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("not called")
		}})
	if got, isErr := call(t, with, "files__needsampling", map[string]any{}); isErr || got != "ran" {
		t.Fatalf("a host with sampling: %q (isError %v), want the tool to run", got, isErr)
	}
}
