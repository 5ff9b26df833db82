package faultsuite

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the fixture MCP server for real-process
	// tests (re-exec helper-process pattern).
	fixture.RunIfChild()
	goleak.VerifyTestMain(m)
}
