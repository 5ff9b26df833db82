package transport

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An Opener makes one fresh connection per generation. The supervisor calls
// Open once per attempt and never reuses what it returned: an exec.Cmd, an
// mcp.Transport and an mcp.ClientSession are all single-use.
type Opener interface {
	// Open prepares generation gen (for stdio: spawns the process). It must
	// not block beyond ctx. An error means nothing of the generation is left
	// running; it should name the thing at fault (the command, the URL).
	Open(ctx context.Context, gen uint64) (Generation, error)
}

// A Generation is one attempt's transport and everything behind it.
//
// The supervisor hands Transport to mcp.Client.Connect exactly once, watches
// ClientSession.Wait for loss, and tears a generation down by cancelling its
// context, calling ClientSession.Close and Terminate, and then waiting for
// Gone (the close barrier, docs/design.md §2).
type Generation interface {
	// Transport is the mcp.Transport for this generation; used once.
	Transport() mcp.Transport

	// Gone is closed when every resource of the generation is released:
	// for stdio, the child was reaped and no process of its group is left;
	// for in-memory and HTTP, the connection was closed. Gone never closes
	// for a generation whose resources cannot be proven released; the
	// supervisor then takes the stuck path.
	Gone() <-chan struct{}

	// Terminate starts an orderly teardown (for stdio: close stdin, grace,
	// SIGTERM to the group, grace, SIGKILL to the group). It does not block,
	// may be called many times and concurrently, and Gone reports the end.
	Terminate()

	// Exit describes how the generation ended. It is complete once Gone is
	// closed; before that it holds what is known so far.
	Exit() ExitInfo
}

// ExitInfo is what a generation leaves behind for logs and traces.
type ExitInfo struct {
	// Status is the exit status or signal ("exit status 3",
	// "signal: killed"); empty when unknown or not a process.
	Status string
	// StderrTail holds the last lines the child wrote to stderr (bounded).
	StderrTail string
	// Cause is the error that made the generation end itself when it is
	// one the supervisor acts on (ErrSignInRequired); nil otherwise.
	Cause error
}

// SessionOptioner is an optional interface of an Opener that needs a
// particular protocol version pinned for its sessions.
type SessionOptioner interface {
	SessionOptions() *mcp.ClientSessionOptions
}

// SessionAware is an optional interface of a Generation that wants the
// session once it is established, for example to probe the health of a
// server whose protocol era reports no loss by itself (stateless HTTP).
// Such a generation ends itself by closing its connection when the server
// stops answering; the supervisor then sees ClientSession.Wait return.
type SessionAware interface {
	Established(cs *mcp.ClientSession)
}

// Aborter is an optional interface of a Generation whose teardown has a
// courtesy step for a server that was serving (for stdio: closing stdin and
// waiting StdinGrace). The supervisor calls Abort instead of Terminate for
// a generation that was never established (connect timeout, garbage on
// stdout, failed initialize): a server that never served has nothing to
// finish, so it is signalled at once (for stdio: SIGTERM to the group, then
// SIGKILL after TermGrace). Like Terminate it does not block, may be called
// many times and concurrently (also after Terminate), and Gone reports the
// end.
type Aborter interface {
	Abort()
}

// TerminationWindower is an optional interface of an Opener whose
// generations need a particular bound on their close barrier (for stdio:
// the stdin grace, SIGTERM grace and reaping). A supervisor whose Options
// set no TerminationWindow takes this one when it is positive.
type TerminationWindower interface {
	TerminationWindow() time.Duration
}

var (
	_ TerminationWindower = (*Stdio)(nil)
	_ TerminationWindower = (*HTTP)(nil)
)
