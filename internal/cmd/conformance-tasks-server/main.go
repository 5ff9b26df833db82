// Command conformance-tasks-server offers, as plain tools with no tasks
// support, every tool the conformance suite's tasks scenarios call
// (greet, slow_compute, failing_job, protocol_error_job, confirm_delete,
// multi_input, test_tool_with_task), doing the work the scenarios expect
// of each. The go-sdk's everything-server has none of them, so in front of
// it those scenarios fail on "unknown tool" whatever mcpkeep does; in
// front of this server they measure the tasks mcpkeep keeps for a server
// without tasks (docs/design.md §24, §25). It serves stdio, or Streamable
// HTTP with -http (stateless with -stateless), like the everything-server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	httpAddr  = flag.String("http", "", "serve Streamable HTTP at this address instead of stdio")
	stateless = flag.Bool("stateless", false, "with -http, serve stateless")
)

func main() {
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpkeep-conformance-tasks-server", Version: "1.0.0"}, nil)
	register(s)
	if *httpAddr != "" {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: *stateless})
		srv := &http.Server{Addr: *httpAddr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
		log.Fatal(srv.ListenAndServe())
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// jobDelay is how long failing_job and protocol_error_job work before
// they fail ("after ~1s", the scenarios' fixtures).
const jobDelay = time.Second

func register(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "sync: Hello, {name}!"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("Hello, %s!", in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "sleeps seconds, then answers; stops when cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Seconds float64 `json:"seconds"`
			Label   string  `json:"label,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("computed %q in %gs", in.Label, in.Seconds)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "a tool execution error after ~1s"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, jobDelay); err != nil {
				return nil, nil, err
			}
			r := text("failing_job failed, as it always does")
			r.IsError = true
			return r, nil, nil
		})
	// The raw form: its handler's error is a JSON-RPC error, not a tool
	// result with isError.
	s.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "a JSON-RPC error after ~1s",
		InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, jobDelay); err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job: internal failure"}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "asks the user (elicitation) to confirm, then answers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Filename string `json:"filename"`
		}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         fmt.Sprintf("Delete %s?", in.Filename),
				RequestedSchema: schema("confirm", "boolean"),
			})
			if err != nil {
				return nil, nil, err
			}
			verdict := "kept"
			if res.Action == "accept" && res.Content["confirm"] == true {
				verdict = "deleted"
			}
			return text(fmt.Sprintf("%s %s", in.Filename, verdict)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "asks two questions (elicitation) at once, then answers"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			var wg sync.WaitGroup
			res := make([]*mcp.ElicitResult, 2)
			errs := make([]error, 2)
			for i := range res {
				wg.Go(func() {
					res[i], errs[i] = req.Session.Elicit(ctx, &mcp.ElicitParams{
						Message:         fmt.Sprintf("Question %d: your name?", i+1),
						RequestedSchema: schema("name", "string"),
					})
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("answers: %v, %v", res[0].Content["name"], res[1].Content["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_task", Description: "asks the user's name (elicitation), then works ~1s and greets them"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         "Your name?",
				RequestedSchema: schema("name", "string"),
			})
			if err != nil {
				return nil, nil, err
			}
			if err := sleep(ctx, jobDelay); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Hello, %v!", res.Content["name"])), nil, nil
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// schema is an elicitation's requested schema of one property.
func schema(prop, typ string) map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{"type": typ}}}
}

// sleep waits d or until the call is cancelled (tasks/cancel reaches the
// server as the call's cancel).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
