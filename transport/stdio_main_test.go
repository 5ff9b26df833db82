package transport_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
)

// TestMain is the transport test binary's only TestMain: it doubles as the
// fixture MCP server when re-executed by a stdio test (fixture.Command),
// and checks that no test leaks a goroutine.
func TestMain(m *testing.M) {
	fixture.RunIfChild()
	goleak.VerifyTestMain(m)
}
