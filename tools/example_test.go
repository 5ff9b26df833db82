package tools_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/tools"
)

func Example() {
	set := tools.NewSet(tools.Limits{}) // default limits
	unsubscribe := set.Subscribe(func(c tools.Change) {
		fmt.Printf("change: %s %s gen %d, %d tools\n", c.Server, c.Kind, c.Gen, len(c.Tools))
	})
	defer unsubscribe()

	if err := set.Reserve("files"); err != nil {
		panic(err)
	}
	list := []*mcp.Tool{
		{Name: "read_file", Description: "Read a file"},
		{Name: "search.grep", Description: "Search files"}, // '.' is not allowed: hashed
	}
	defs, err := tools.Build("files", list, nil, tools.Limits{})
	if err != nil {
		panic(err)
	}
	if err := set.Replace("files", 1, defs); err != nil {
		panic(err)
	}
	// The server recovers as generation 2 with the same tools: no change.
	if err := set.Replace("files", 2, defs); err != nil {
		panic(err)
	}

	for _, t := range set.List() {
		fmt.Println(t.PublicName, "->", t.Name)
	}
	server, t, ok := set.Lookup("files__read_file")
	fmt.Println(server, t.Name, ok)
	gen, _, _ := set.Server("files")
	fmt.Println("gen", gen)
	// Output:
	// change: files replaced gen 1, 2 tools
	// files__read_file -> read_file
	// files__search_grep_07304ce6 -> search.grep
	// files read_file true
	// gen 2
}
