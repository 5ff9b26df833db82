package mcpkeep_test

import (
	"context"
	"fmt"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// docsServer stands in for a real server: a resource, a prompt with an
// argument, and a tool that asks the host's model for a sentence
// (sampling/createMessage).
func docsServer(_ uint64, s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "docs://readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "Read me first."}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "summarize", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Summarize " + req.Params.Arguments["topic"] + "."}}}}, nil
		})
	// On protocol 2026-07-28 a server asks the host inside its result
	// (multi round trip): the client answers and retries the call.
	ask := &mcp.CreateMessageParams{MaxTokens: 20,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "a tagline, please"}}}}
	s.AddTool(&mcp.Tool{Name: "tagline", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if res, ok := req.Params.InputResponses["tagline"].(*mcp.CreateMessageWithToolsResult); ok && len(res.Content) > 0 {
				return &mcp.CallToolResult{Content: res.Content[:1]}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"tagline": ask}}, nil
		})
}

// Everything a server offers reaches the host through its Supervisor:
// resources (never renamed), prompts (named like tools in the Catalog),
// and the server's own requests, here sampling, answered by the host's
// handler. A restarted server gets the same handlers, and its catalog is
// swapped in as its tools are.
func ExampleSupervisor_ReadResource() {
	ctx := context.Background()
	mem := transport.NewMemory()
	mem.Serve = docsServer
	catalog := tools.NewCatalog(tools.Limits{})
	sup, err := mcpkeep.New(mcpkeep.Options{
		Name:    "docs",
		Opener:  mem,
		Catalog: catalog,
		Host: mcpkeep.HostHandlers{
			CreateMessage: func(_ context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "host-model", Role: "assistant",
					Content: &mcp.TextContent{Text: "Docs you can trust (for " + server + ")"}}, nil
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sup.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer sup.Dispose(ctx)

	for _, p := range catalog.Prompts() {
		fmt.Println("prompt", p.PublicName, "->", p.Name)
	}
	for _, r := range catalog.Resources() {
		fmt.Println("resource", r.URI)
	}
	read, err := sup.ReadResource(ctx, "docs://readme", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(read.Contents[0].Text)
	got, err := sup.GetPrompt(ctx, "summarize", map[string]string{"topic": "the README"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Messages[0].Content.(*mcp.TextContent).Text)
	res, err := sup.Call(ctx, "tagline", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// prompt docs__summarize -> summarize
	// resource docs://readme
	// Read me first.
	// Summarize the README.
	// Docs you can trust (for docs)
}
