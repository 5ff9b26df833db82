//go:build !unix

package transport

import "context"

// Open fails: mcpkeep owns a stdio server through its process group, which
// this platform does not have.
func (s *Stdio) Open(ctx context.Context, gen uint64) (Generation, error) {
	return nil, &StartError{Command: s.Command, Err: ErrUnsupported}
}

// stdioHooks has nothing to hook where Open always fails.
type stdioHooks struct{}
