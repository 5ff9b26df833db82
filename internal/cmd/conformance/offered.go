package main

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// offered starts the stdio server bin once, alone, and returns the tools
// and prompts it offers, each with prefix: the names the proxy column's
// shim gives that server's prefix (shim.go). Asking the server itself
// keeps the shim true to whatever the server offers.
func offered(ctx context.Context, bin, prefix string) (map[shimName]string, error) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "conformance-names", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	defer cs.Close()
	out := map[shimName]string{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("%s: tools/list: %w", bin, err)
		}
		out[shimName{"tool", t.Name}] = prefix
	}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("%s: prompts/list: %w", bin, err)
			}
			out[shimName{"prompt", p.Name}] = prefix
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s offers no tool or prompt", bin)
	}
	return out, nil
}
