package mcpkeep_test

import (
	"context"
	"fmt"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host supervises one server: Start connects it and registers its tools
// in the Sink under public names, Call reaches it by the original name,
// and Dispose shuts it down to quiescence. A scripted in-memory server
// stands in for a real one (transport.Stdio{Command: ...} in a host), so
// the example runs offline.
func ExampleSupervisor() {
	ctx := context.Background()
	set := tools.NewSet(tools.Limits{})
	sup, err := mcpkeep.New(mcpkeep.Options{
		Name:   "files",
		Opener: transport.NewMemory("read", "write"),
		Sink:   set,
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

	for _, t := range set.List() {
		fmt.Println(t.PublicName, "->", t.Name)
	}
	res, err := sup.Call(ctx, "read", map[string]any{"text": "hello"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// files__read -> read
	// files__write -> write
	// hello
}

// A Pool runs the servers of a config file, all registering into one tools
// Set, and routes calls by public name. Here PoolOptions.Opener swaps the
// configured commands for in-memory servers so the example runs offline;
// a host leaves it nil.
func ExamplePool() {
	ctx := context.Background()
	cfg, warnings, err := config.Parse([]byte(`{
	  "reconnect": {"initialDelayMs": 100, "maxAttempts": 3},
	  "mcpServers": {
	    "notes":  {"command": "notes-server", "alwaysAllow": ["read"]},
	    "search": {"command": "search-server", "waitForReadyMs": 2000}
	  }
	}`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	pool := mcpkeep.NewPool(mcpkeep.PoolOptions{
		Opener: func(config.Server) (transport.Opener, error) { return transport.NewMemory("echo"), nil },
	})
	defer pool.Dispose(ctx)
	if err := pool.Apply(ctx, cfg); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range pool.Sink().(*tools.Set).List() {
		fmt.Println(t.PublicName)
	}
	res, err := pool.Call(ctx, "search__echo", map[string]any{"text": "found"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// warning: mcpServers.notes.alwaysAllow: ignored: mcpkeep does not use it (tool approval is the host's business)
	// notes__echo
	// search__echo
	// found
}
