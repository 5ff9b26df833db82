package transport

import (
	"errors"
	"time"
)

// ErrStalled is wrapped by the errors of a stdio generation whose server
// took nothing of what mcpkeep had to write to its stdin for longer than
// the write bound (docs/design.md §19): the generation ends as if the
// server had stopped answering. The write that stalled fails with it, and
// with mcp.ErrConnectionClosed (not sent) unless every byte of the message
// but its newline went out: a message whose last byte never reached the
// pipe cannot have been acted on. A write queued behind it fails with it
// and mcp.ErrConnectionClosed too; the reader ends with it and io.EOF, so
// calls in flight fail as lost.
var ErrStalled = errors.New("stdio: the server stopped reading its stdin")

// DefaultWriteBound is a stdio generation's write bound until BoundWrites
// sets another: the default connect timeout.
const DefaultWriteBound = 30 * time.Second

// A WriteBounder is a Generation that ends itself when its server takes
// nothing of a write for longer than a bound. The supervisor sets the
// bound to its connect timeout right after Open, before the handshake,
// so no caller's deadline depends on a pipe draining for longer than it.
type WriteBounder interface {
	BoundWrites(d time.Duration)
}
