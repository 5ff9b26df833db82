package config_test

import (
	"fmt"

	"github.com/mcpkeep/mcpkeep/config"
)

// Every config error names its JSON path and the rule it breaks.
func ExampleParse_error() {
	_, _, err := config.Parse([]byte(`{"mcpServers": {"files": {
	  "command": "npx",
	  "reconnect": {"initialDelayMs": 5000, "maxDelayMs": 1000}
	}}}`), nil)
	fmt.Println(err)
	// Output:
	// mcpServers.files.reconnect.maxDelayMs: must be >= initialDelayMs (5s), got 1000 (1s)
}
