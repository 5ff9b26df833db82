//go:build replicas

package replicase2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envLedger, set to a directory, makes the test binary the ledger
// server: each record call is written to a file of its own process
// there before it answers, so a call run twice (by any replica, any
// generation) shows as an id written twice.
const envLedger = "MCPKEEP_REPLICAS_LEDGER"

type recordArgs struct {
	ID string `json:"id"`
	MS int    `json:"ms,omitempty"`
}

type askArgs struct {
	ID string `json:"id"`
}

func runLedger(dir string) int {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("ledger-%d", os.Getpid())), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "1"}, nil)
	// record has no hints: it is not safe to run twice (docs/design.md
	// §21), so mcpkeep must never replay it.
	mcp.AddTool(s, &mcp.Tool{Name: "record", Description: "write id to the ledger, wait ms, reply rec:id"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a recordArgs) (*mcp.CallToolResult, any, error) {
			if _, err := f.WriteString(a.ID + "\n"); err != nil {
				return nil, nil, err
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rec:" + a.ID}}}, nil, nil
		})
	// ask asks the host (sampling): a legacy host answers on its
	// session's stream, a 2026-07-28 host by multi round trip.
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "sample the host with id, reply asked:<its text>"},
		func(ctx context.Context, req *mcp.CallToolRequest, a askArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: a.ID}}}})
			if err != nil {
				return nil, nil, err
			}
			text, _ := res.Content.(*mcp.TextContent)
			if text == nil {
				return nil, nil, fmt.Errorf("sampling answered %T", res.Content)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked:" + text.Text}}}, nil, nil
		})
	// confirm asks the host by elicitation, the same two ways.
	mcp.AddTool(s, &mcp.Tool{Name: "confirm", Description: "elicit id from the host, reply confirmed:<its answer>"},
		func(ctx context.Context, req *mcp.CallToolRequest, a askArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: a.ID, RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("confirmed:%s:%v", res.Action, res.Content["answer"])}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}
