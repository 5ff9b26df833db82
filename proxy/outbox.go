package proxy

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// No host I/O on a server's notification path (docs/design.md §19): what
// the proxy sends a host on its own (log messages, progress) goes through
// that host session's outbox, a bounded queue with a writer of its own, so
// a host that stops reading delays nobody but itself. When an outbox is
// full its oldest log message is dropped and counted, or, with no log
// message queued, its oldest progress: a flood of one server's logs does
// not cost another call its progress.

// outboxCap bounds one session's queued messages; outboxSendBound bounds
// one send (an HTTP write is bounded by the connection's write deadline
// as well, see boundedWriter).
const (
	outboxCap       = 256
	outboxSendBound = 10 * time.Second
)

// outboxes are the outboxes of all host sessions.
type outboxes struct {
	mu      sync.Mutex
	byHost  map[*mcp.ServerSession]*outbox
	dropped atomic.Uint64 // messages dropped by full outboxes, all sessions
	wg      sync.WaitGroup
	closed  bool
}

// outbox is one session's queue. Its writer runs while the queue is not
// empty, so an idle session costs no goroutine.
type outbox struct {
	mu      sync.Mutex
	items   []outItem
	running bool
	// pushed numbers the messages queued; done is the number of the last
	// one sent (or dropped with everything before it); moved is closed
	// and replaced each time done moves. A flush waits for done to reach
	// what was pushed before it, not for an empty queue: another server's
	// flood keeps the queue busy, and must not hold this answer
	// (docs/design.md §19).
	pushed, done uint64
	moved        chan struct{}
}

// outItem is one queued message; progress tells it from a log message.
type outItem struct {
	send     func(context.Context)
	progress bool
	seq      uint64
}

// push queues send for ss without blocking.
func (os *outboxes) push(ss *mcp.ServerSession, progress bool, send func(context.Context)) {
	os.mu.Lock()
	if os.closed {
		os.mu.Unlock()
		return
	}
	if os.byHost == nil {
		os.byHost = map[*mcp.ServerSession]*outbox{}
	}
	o := os.byHost[ss]
	if o == nil {
		o = &outbox{}
		os.byHost[ss] = o
	}
	o.mu.Lock()
	if len(o.items) >= outboxCap {
		victim := slices.IndexFunc(o.items, func(it outItem) bool { return !it.progress })
		if victim < 0 {
			victim = 0
		}
		o.items = slices.Delete(o.items, victim, victim+1)
		os.dropped.Add(1)
	}
	o.pushed++
	o.items = append(o.items, outItem{send: send, progress: progress, seq: o.pushed})
	start := !o.running
	if start {
		o.running = true
		os.wg.Add(1)
	}
	o.mu.Unlock()
	os.mu.Unlock()
	if start {
		go os.write(o)
	}
}

func (os *outboxes) write(o *outbox) {
	defer os.wg.Done()
	for {
		o.mu.Lock()
		if len(o.items) == 0 {
			o.running = false
			o.mu.Unlock()
			return
		}
		it := o.items[0]
		o.items[0] = outItem{}
		o.items = o.items[1:]
		o.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), outboxSendBound)
		it.send(ctx)
		cancel()
		o.mu.Lock()
		o.advance(it.seq)
		o.mu.Unlock()
	}
}

// advance records that everything up to seq left the queue, and wakes
// the flushes waiting. o.mu is held.
func (o *outbox) advance(seq uint64) {
	if seq <= o.done {
		return
	}
	o.done = seq
	if o.moved != nil {
		close(o.moved)
		o.moved = nil
	}
}

// owes reports whether ss has messages queued that were not sent yet
// (flush would wait for them).
func (os *outboxes) owes(ss *mcp.ServerSession) bool {
	os.mu.Lock()
	o := os.byHost[ss]
	os.mu.Unlock()
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done < o.pushed
}

// flush waits until what was queued for ss before it has been sent (or
// dropped), or ctx ends: a request's result must not overtake its own
// progress. What is queued after it (another server's flood) is not
// waited for.
func (os *outboxes) flush(ctx context.Context, ss *mcp.ServerSession) {
	os.mu.Lock()
	o := os.byHost[ss]
	os.mu.Unlock()
	if o == nil {
		return
	}
	o.mu.Lock()
	target := o.pushed
	for o.done < target {
		if o.moved == nil {
			o.moved = make(chan struct{})
		}
		moved := o.moved
		o.mu.Unlock()
		select {
		case <-moved:
		case <-ctx.Done():
			return
		}
		o.mu.Lock()
	}
	o.mu.Unlock()
}

// drop forgets a session that ended; its queued messages are discarded.
func (os *outboxes) drop(ss *mcp.ServerSession) {
	os.mu.Lock()
	o := os.byHost[ss]
	delete(os.byHost, ss)
	os.mu.Unlock()
	if o != nil {
		o.mu.Lock()
		o.items = nil
		o.advance(o.pushed) // nothing left to wait for
		o.mu.Unlock()
	}
}

// close stops taking messages and waits for the writers, bounded by ctx
// (a writer blocked on a host that stopped reading ends with its send's
// bound).
func (os *outboxes) close(ctx context.Context) {
	os.mu.Lock()
	os.closed = true
	for _, o := range os.byHost {
		o.mu.Lock()
		o.items = nil
		o.advance(o.pushed)
		o.mu.Unlock()
	}
	os.mu.Unlock()
	done := make(chan struct{})
	go func() { os.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
