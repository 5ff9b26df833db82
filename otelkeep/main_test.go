package otelkeep

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild() // the e2e test's server is this binary (internal/fixture)
	goleak.VerifyTestMain(m)
}
