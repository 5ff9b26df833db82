package main

import (
	"fmt"
	"io"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

// runFixture is `mcpkeep fixture`: the built-in MCP stdio test server, with
// every MCP feature and fault modes, which `mcpkeep demo` and the end-to-end
// tests run as a supervised child. It speaks on the process's own stdin and
// stdout. --help lists its tools, prompts, resources and modes
// (fixture.Usage).
func runFixture(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fixture", "fixture [--mode MODE]")
	mode := fs.String("mode", "normal", "normal | hang-init | exit-after=D | garbage | ignore-term | grandchild")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), "\n"+fixture.Usage)
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if _, err := fixture.ParseMode(*mode); err != nil {
		fmt.Fprintf(stderr, "mcpkeep fixture: %v\n", err)
		return 2
	}
	return fixture.Main([]string{"--mode", *mode})
}
