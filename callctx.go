package mcpkeep

import (
	"context"
	"sync/atomic"
	"time"
)

// callCtx is the context of one request over a generation (see
// generation.begin): the caller's values and deadline, and a done channel
// closed when the caller's context is done or when the generation ends,
// whichever comes first. It is reused for later requests of the same
// generation when nothing can still reach it, so a request derives no
// context of its own.
//
// The generation's callsMu guards caller, closed, err (written before done
// is closed, and final from then on) and the list links. done is made once
// and never replaced; a callCtx whose done was closed is never reused.
type callCtx struct {
	g      *generation
	caller context.Context
	done   chan struct{}
	err    error
	closed bool
	// derived is set when a context was derived from this one (the
	// context package looks up its parent's cancelCtx then): such a child
	// may outlive the request, so this callCtx is not reused.
	derived atomic.Bool
	// hookCtx is the caller context whose end closes done (through
	// context.AfterFunc; hookStop unregisters it), hookDone its Done
	// channel; nil when there is no hook. With keep, the hook outlives
	// the request: the free callCtx keeps watching its caller's context
	// until a request with another one, or the generation's end. lastDone
	// is the Done channel of the last caller whose hook was not kept: a
	// second request on it keeps its hook.
	hookCtx  context.Context
	hookDone <-chan struct{}
	hookStop func() bool
	keep     bool
	lastDone <-chan struct{}
	// callerDone is c.onCallerDone, bound once.
	callerDone func()
	prev, next *callCtx
}

func newCallCtx(g *generation) *callCtx {
	c := &callCtx{g: g, done: make(chan struct{})}
	c.callerDone = c.onCallerDone
	return c
}

// hook makes the end of ctx close done; c has no hook. Called with
// callsMu held.
func (c *callCtx) hook(ctx context.Context) {
	c.hookCtx, c.hookDone = ctx, ctx.Done()
	c.hookStop = context.AfterFunc(ctx, c.callerDone)
}

// unhook stops watching the hooked context; false when its end already
// started closing done (c is closed, or about to be). Called with callsMu
// held.
func (c *callCtx) unhook() bool {
	if c.hookStop == nil {
		return true
	}
	stopped := c.hookStop()
	c.hookCtx, c.hookDone, c.hookStop, c.keep = nil, nil, nil, false
	return stopped
}

// onCallerDone runs, in context.AfterFunc's own goroutine, when the hooked
// context ended: during a request (which it cuts) or while c was free
// (which it retires).
func (c *callCtx) onCallerDone() {
	c.g.callsMu.Lock()
	defer c.g.callsMu.Unlock()
	if c.hookStop != nil { // still hooked: nobody stopped the hook first
		c.close(c.hookCtx.Err())
	}
}

// close closes done with err, once. Called with callsMu held.
func (c *callCtx) close(err error) {
	if c.closed {
		return
	}
	c.closed, c.err = true, err
	close(c.done)
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.caller.Deadline() }
func (c *callCtx) Done() <-chan struct{}       { return c.done }

func (c *callCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func (c *callCtx) Value(key any) any {
	// Deriving a cancellable context (WithCancel, WithTimeout, AfterFunc,
	// errgroup) and context.Cause look for the parent's cancelCtx under
	// the context package's own key, a *int. TestCallCtxDerived checks
	// that this still holds.
	if _, ok := key.(*int); ok {
		c.derived.Store(true)
	}
	return c.caller.Value(key)
}

func (c *callCtx) String() string { return "mcpkeep.callCtx" }

// callList is the generation's in-flight callCtx, doubly linked.
type callList struct{ head *callCtx }

func (l *callList) push(c *callCtx) {
	c.prev, c.next = nil, l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
}

func (l *callList) remove(c *callCtx) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.head == c {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
}
