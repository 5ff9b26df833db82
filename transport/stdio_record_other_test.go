//go:build unix && !linux

package transport_test

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

// recordGroup records nothing where the recorder (which reads /proc) does
// not exist; its check passes.
func recordGroup(*transport.Stdio) func(t *testing.T, pgid int) {
	return func(*testing.T, int) {}
}
