// Command conformance-client is the client under test of the MCP
// conformance suite's client scenarios (make conformance, docs/design.md
// §12): the suite starts it with its test server's URL as the one argument
// and the scenario's name in MCP_CONFORMANCE_SCENARIO, as it starts the
// go-sdk's everything-client. Unlike that client it acts through mcpkeep's
// own client side: a Supervisor with a transport.HTTP opener, its tool
// registry and its host handlers, so the suite judges what a host of
// mcpkeep's library gets. For the sign-in scenarios (auth/*) it signs in
// first with package oauth, as `mcpkeep auth login` does (auth.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scenario is one client scenario: what the client does once connected.
type scenario struct {
	// tool is called (with args) after the tool list arrived; empty means
	// the scenario only connects and lists.
	tool string
	args map[string]any
	// host is what the client offers the server.
	host mcpkeep.HostHandlers
	// steps, when set, is what the client does once started instead of
	// calling tool (eras.go: the 2026-07-28 scenarios).
	steps func(ctx context.Context, sup *mcpkeep.Supervisor, set *tools.Set, cat *tools.Catalog) error
}

// scenarios are the suite's client scenarios this adapter plays; each
// follows the go-sdk's everything-client (conformance/everything-client).
var scenarios = map[string]scenario{
	"initialize": {},
	"tools_call": {tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}},
	"sse-retry":  {tool: "test_reconnection", args: map[string]any{}},
	// The client accepts with no content: the server's defaults apply
	// (SEP-1034).
	"elicitation-sep1034-client-defaults": {tool: "test_client_elicitation_defaults", args: map[string]any{},
		host: mcpkeep.HostHandlers{Elicit: func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}}},
}

// timeout bounds the whole scenario; the suite's own default is 30 s.
const timeout = 25 * time.Second

func main() {
	if len(os.Args) != 2 {
		log.Fatalf("usage: %s SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	if isAuth(name) {
		err = runAuth(ctx, os.Args[1])
	} else {
		sc, ok := scenarios[name]
		if !ok {
			sc, ok = eraScenarios[name]
		}
		if !ok {
			log.Fatalf("MCP_CONFORMANCE_SCENARIO: unknown scenario %q", name)
		}
		err = run(ctx, os.Args[1], sc, nil)
	}
	if err != nil {
		log.Fatalf("scenario %q: %v", name, err)
	}
}

// run connects a Supervisor to url, waits for its tool list and calls the
// scenario's tool, then disposes the supervisor.
func run(ctx context.Context, url string, sc scenario, signIn auth.OAuthHandler) (err error) {
	set := tools.NewSet(tools.Limits{})
	cat := tools.NewCatalog(tools.Limits{})
	sup, err := mcpkeep.New(mcpkeep.Options{
		Catalog:        cat,
		Name:           "conformance",
		Opener:         &transport.HTTP{URL: url, Server: "conformance", OAuth: signIn},
		ConnectTimeout: 10 * time.Second,
		// A scenario server that refuses the first connect is a failure
		// to report, not to retry behind the suite's back.
		FailOnStartupError: true,
		Sink:               set,
		Host:               sc.host,
		Namer:              tools.OwnNames,
		Client:             &mcp.Implementation{Name: "mcpkeep-conformance-client", Version: "1.0.0"},
	})
	if err != nil {
		return err
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		err = errors.Join(err, sup.Dispose(dctx))
	}()
	if err := sup.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if sc.steps != nil {
		return sc.steps(ctx, sup, set, cat)
	}
	if sc.tool == "" {
		return nil
	}
	if _, _, ok := set.Lookup(sc.tool); !ok {
		return fmt.Errorf("tool %q not listed by the server", sc.tool)
	}
	res, err := sup.Call(ctx, sc.tool, sc.args, nil)
	if err != nil {
		return fmt.Errorf("call %s: %w", sc.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("call %s: the tool returned an error result", sc.tool)
	}
	return nil
}
