package mcpkeep

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

var (
	// ErrNotConnected: the server has no established generation right now.
	// The error is a *NotConnectedError carrying the server, its state and
	// the next retry.
	ErrNotConnected = errors.New("not connected")
	// ErrExhausted: the server gave up (budget spent, reconnect disabled or
	// stuck) and waits for a manual Reconnect.
	ErrExhausted = errors.New("exhausted")
	// ErrDisposed: the supervisor was disposed (or never started).
	ErrDisposed = errors.New("disposed")
	// ErrIncompleteShutdown: Dispose gave up waiting for the close barrier
	// within the termination window; something may still be running.
	ErrIncompleteShutdown = errors.New("incomplete shutdown")
	// ErrConnectTimeout: spawn + handshake + initial tools/list took longer
	// than the connect timeout.
	ErrConnectTimeout = errors.New("connect timeout")
	// ErrStuck: a generation's close barrier did not complete within the
	// termination window; no new process is started.
	ErrStuck = errors.New("close barrier incomplete within the termination window")
	// ErrAlreadyStarted: Start was called twice.
	ErrAlreadyStarted = errors.New("already started")
	// ErrNotStarted: Start has not been called.
	ErrNotStarted = errors.New("not started")
	// ErrInvalidOptions is wrapped by every Options validation error.
	ErrInvalidOptions = errors.New("invalid supervisor options")
	// ErrPagination: a server's list repeated a cursor, or went on for
	// more pages than its limit allows items; the sync failed and the
	// previous lists stay.
	ErrPagination = errors.New("endless pagination")
	// ErrSignInRequired: the server wants a sign-in that only a person can
	// give (docs/design.md §22). The supervisor stops in exhausted at once,
	// spending no retry; the error (a *transport.SignInRequiredError) names
	// the command to run ("run: mcpkeep auth login NAME"), and so do the
	// errors of calls made while it waits and Snapshot.LastErr. A
	// Reconnect after signing in starts afresh.
	ErrSignInRequired = transport.ErrSignInRequired
)

// NotConnectedError is returned by Call while the server is not
// established. errors.Is matches ErrNotConnected, ErrExhausted or
// ErrDisposed when the state is exhausted or disposed, and
// ErrSignInRequired while the server waits for a person to sign in.
type NotConnectedError struct {
	Server    string
	State     fsm.State
	NextRetry time.Time // zero when no retry is scheduled
	LastErr   error     // why the last generation ended, if known
}

func (e *NotConnectedError) Error() string {
	msg := fmt.Sprintf("mcpkeep: server %q not connected (state %s", e.Server, e.State)
	if !e.NextRetry.IsZero() {
		msg += ", next retry at " + e.NextRetry.Format(time.RFC3339Nano)
	}
	msg += ")"
	if e.LastErr != nil {
		msg += ": " + e.LastErr.Error()
	}
	return msg
}

// Is makes the state visible to errors.Is.
func (e *NotConnectedError) Is(target error) bool {
	switch target {
	case ErrNotConnected:
		return true
	case ErrExhausted:
		return e.State == fsm.Exhausted
	case ErrDisposed:
		return e.State == fsm.Disposed
	case ErrSignInRequired:
		return errors.Is(e.LastErr, ErrSignInRequired)
	}
	return false
}

// OptionError names the Options field at fault.
type OptionError struct {
	Field string
	Rule  string
	Err   error // underlying cause, if any
}

func (e *OptionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("mcpkeep: %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("mcpkeep: %s: %s", e.Field, e.Rule)
}

func (e *OptionError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidOptions, e.Err}
	}
	return []error{ErrInvalidOptions}
}

// ErrUnknownPrompt: GetPrompt of a prompt the server does not list.
var ErrUnknownPrompt = errors.New("unknown prompt")

// ErrUnknownResource: ReadResource of a URI the server neither lists nor
// matches with one of its resource templates.
var ErrUnknownResource = errors.New("unknown resource")

// ErrConnectionLost wraps a call's error when its generation ended while
// the call was in flight. Calls are never replayed: they may not be
// idempotent.
var ErrConnectionLost = errors.New("connection lost during the call")

// errSessionEnded stands in for a nil ClientSession.Wait result: the peer
// closed the session cleanly, which is still a loss to the supervisor.
var errSessionEnded = errors.New("session ended")

// errManualReconnect is the recorded cause of a host-requested restart.
var errManualReconnect = errors.New("manual reconnect")
