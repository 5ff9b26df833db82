//go:build replicas

package replicase2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the replicas' MCP server (ledger.go).
	if dir := os.Getenv(envLedger); dir != "" {
		os.Exit(runLedger(dir))
	}
	goleak.VerifyTestMain(m)
}
