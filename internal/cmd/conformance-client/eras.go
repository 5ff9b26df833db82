package main

import (
	"context"
	"encoding/json"
	"log"
	"os"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraScenarios are the client scenarios of the 0.2.x suite's 2026-07-28
// requirement set (make conformance), each doing through a
// Supervisor what the go-sdk's everything-client does. The Supervisor
// connects and lists at Start, so a scenario that only needs a connect
// and a tools/list has no steps of its own.
var eraScenarios = map[string]scenario{
	"request-metadata":         {},
	"json-schema-ref-no-deref": {},
	// The server's request state is echoed by the SDK's multi round trip
	// under the Supervisor; the elicitation is answered here.
	"sep-2322-client-request-state": {
		host: mcpkeep.HostHandlers{Elicit: func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		}},
		steps: callEach("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"),
	},
	// One request of each verb, so the suite sees Mcp-Method and Mcp-Name
	// on every one.
	"http-standard-headers": {steps: func(ctx context.Context, sup *mcpkeep.Supervisor, set *tools.Set, cat *tools.Catalog) error {
		if list := set.List(); len(list) > 0 {
			logErr[*mcp.CallToolResult]("call", list[0].PublicName)(sup.Call(ctx, list[0].PublicName, map[string]any{}, nil))
		}
		if rs := cat.Resources(); len(rs) > 0 {
			logErr[*mcp.ReadResourceResult]("read", rs[0].URI)(sup.ReadResource(ctx, rs[0].URI, nil))
		}
		if ps := cat.Prompts(); len(ps) > 0 {
			logErr[*mcp.GetPromptResult]("get", ps[0].PublicName)(sup.GetPrompt(ctx, ps[0].PublicName, map[string]string{}, nil))
		}
		return nil
	}},
	// The runner's calls, whose x-mcp-header parameters the SDK mirrors
	// into Mcp-Param-* headers.
	"http-custom-headers": {steps: func(ctx context.Context, sup *mcpkeep.Supervisor, _ *tools.Set, _ *tools.Catalog) error {
		var c struct {
			ToolCalls []struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"toolCalls"`
		}
		_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c)
		for _, call := range c.ToolCalls {
			logErr[*mcp.CallToolResult]("call", call.Name)(sup.Call(ctx, call.Name, call.Arguments, nil))
		}
		return nil
	}},
	// Every tool that survived the list (the SDK drops those with invalid
	// header annotations) is called.
	"http-invalid-tool-headers": {steps: func(ctx context.Context, sup *mcpkeep.Supervisor, set *tools.Set, _ *tools.Catalog) error {
		for _, t := range set.List() {
			logErr[*mcp.CallToolResult]("call", t.PublicName)(sup.Call(ctx, t.PublicName, map[string]any{"region": "us-west1"}, nil))
		}
		return nil
	}},
}

// callEach calls the named tools in turn; a refusal is logged (some are
// meant to be refused).
func callEach(names ...string) func(context.Context, *mcpkeep.Supervisor, *tools.Set, *tools.Catalog) error {
	return func(ctx context.Context, sup *mcpkeep.Supervisor, _ *tools.Set, _ *tools.Catalog) error {
		for _, n := range names {
			logErr[*mcp.CallToolResult]("call", n)(sup.Call(ctx, n, map[string]any{}, nil))
		}
		return nil
	}
}

// logErr logs a step's error: the suite's checks judge the scenario.
func logErr[T any](what, name string) func(T, error) {
	return func(_ T, err error) {
		if err != nil {
			log.Printf("%s %s: %v", what, name, err)
		}
	}
}
