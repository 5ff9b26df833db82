package proxy

import (
	"encoding/json"
	"strings"

	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild() // the real stdio servers of twin_test.go are this binary
	goleak.VerifyTestMain(m)
}

// testDeadline bounds every wait of the proxy's tests.
const testDeadline = 20 * time.Second

// text is the text content of a tool result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
