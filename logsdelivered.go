package mcpkeep

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logsDelivered counts the server's log messages (notifications/message)
// a generation's connection read and those its host handler was given.
// The SDK queues notifications and hands a reply to its caller at once,
// so a log message the server sent just before a reply may still be
// queued when the reply arrives. A request with a per-request log level
// waits (removeProgress) until every log message read before its reply
// was delivered: once the request has returned, a message of its level
// reaches no host (docs/design.md §13). Counted only where the
// generation has a LoggingMessage handler (else nothing would deliver).
type logsDelivered struct {
	on      bool // a handler is installed; set before the connection reads
	read    atomic.Int64
	handled atomic.Int64

	mu   sync.Mutex
	wake chan struct{} // closed and replaced when handled moves
}

// readOne counts a notifications/message the connection read, when the
// SDK will deliver it (its params decode).
func (l *logsDelivered) readOne(params json.RawMessage) {
	if !l.on {
		return
	}
	var p mcp.LoggingMessageParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	l.read.Add(1)
}

// handledOne counts a message given to the host handler.
func (l *logsDelivered) handledOne() {
	l.handled.Add(1)
	l.mu.Lock()
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
	l.mu.Unlock()
}

// caughtUp reports whether the messages read up to target were handled,
// and else a channel closed when handled moves.
func (l *logsDelivered) caughtUp(target int64) (bool, <-chan struct{}) {
	if l.handled.Load() >= target {
		return true, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	w := l.wake
	if l.handled.Load() >= target { // moved before the channel was taken
		return true, nil
	}
	return false, w
}
