package benchsuite

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the fixture server (re-exec pattern).
	probe.Start() // a fixture the proxy rows look into
	fixture.RunIfChild()
	goleak.VerifyTestMain(m)
}
