package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// RawConn is a connection that carries, beside the SDK session's own
// traffic, requests the SDK never sees: a relay's tools/call sent and
// answered as JSON-RPC, its params and result never decoded
// (docs/design.md §24). Its requests have ids of their own ("mcpkeep-raw-N":
// the SDK's client numbers its requests), so their answers, and the
// progress of their tokens, are taken out of the stream before the SDK
// reads it. Everything else passes through untouched.
//
// The SDK's reader is the only caller of Read, as on any connection: a raw
// request is answered only while the session reads, and fails when the
// connection ends.
type RawConn struct {
	mcp.Connection

	seq atomic.Uint64
	// waiting counts requests in flight: Read looks at progress only while
	// one is.
	waiting atomic.Int32

	mu      sync.Mutex
	pending map[string]*rawCall // by id, which is also the progress token
	ended   error               // the connection's end: no more calls

	// meta holds the 2026-07-28 request _meta fields (protocol version,
	// client info and capabilities) the SDK's client put on its first
	// request, for raw requests to carry the same (see SessionMeta).
	meta atomic.Pointer[[]byte]
}

type rawCall struct {
	done     chan rawAnswer
	progress func(json.RawMessage)
}

type rawAnswer struct {
	result json.RawMessage
	err    error
}

// rawPrefix starts every raw request's id and progress token.
const rawPrefix = "mcpkeep-raw-"

// NewRawConn wraps c.
func NewRawConn(c mcp.Connection) *RawConn {
	return &RawConn{Connection: c, pending: map[string]*rawCall{}}
}

// ErrRawUnavailable: a raw request cannot be made on this connection now
// (the session's 2026-07-28 _meta is not known yet); nothing was sent.
var ErrRawUnavailable = errors.New("transport: no raw request on this connection yet")

// Call sends a request for method whose params build makes (given the
// request's progress token when progress is set, else ""), and waits for
// its answer: the raw result, the server's *jsonrpc.Error, or the
// connection's end (the reader's error, wrapped). progress gets the params
// of each notifications/progress for the token, on the reader's goroutine,
// before the answer that follows them. A context that ends first sends
// notifications/cancelled, as the SDK's client does, and returns its
// error. A request the connection refused to send fails with an error
// matching mcp.ErrConnectionClosed, as the SDK's own would.
func (c *RawConn) Call(ctx context.Context, method string, build func(token string) (json.RawMessage, error), progress func(json.RawMessage)) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := rawPrefix + strconv.FormatUint(c.seq.Add(1), 10)
	token := ""
	if progress != nil {
		token = id
	}
	params, err := build(token)
	if err != nil {
		return nil, err
	}
	rid, _ := jsonrpc.MakeID(id)
	call := &rawCall{done: make(chan rawAnswer, 1), progress: progress}
	c.mu.Lock()
	if c.ended != nil {
		err := c.ended
		c.mu.Unlock()
		return nil, fmt.Errorf("%w (%w)", mcp.ErrConnectionClosed, err)
	}
	c.pending[id] = call
	c.mu.Unlock()
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: params}); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case a := <-call.done:
		return a.result, a.err
	case <-ctx.Done():
		if c.forget(id) {
			c.cancel(rid, ctx)
		}
		return nil, ctx.Err()
	}
}

// forget drops a pending call; false if its answer was taken already.
func (c *RawConn) forget(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancel tells the server a raw request is abandoned: best effort, off
// the caller's way (a peer that does not read must not hold the caller
// past its own end), bounded as the SDK's client bounds it.
func (c *RawConn) cancel(id jsonrpc.ID, ctx context.Context) {
	p, err := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: ctx.Err().Error()})
	if err != nil {
		return
	}
	go func() {
		nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyBound)
		defer stop()
		_ = c.Connection.Write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
	}()
}

// cancelNotifyBound bounds the write of a cancellation.
const cancelNotifyBound = 5 * time.Second

// Read returns the next message for the SDK, after taking out the answers
// and progress of raw requests.
func (c *RawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			c.end(err)
			return m, err
		}
		switch m := m.(type) {
		case *jsonrpc.Response:
			if id, ok := m.ID.Raw().(string); ok && strings.HasPrefix(id, rawPrefix) {
				c.answer(id, m)
				continue
			}
		case *jsonrpc.Request:
			if m.Method == "notifications/progress" && c.waiting.Load() > 0 && c.progress(m.Params) {
				continue
			}
		}
		return m, nil
	}
}

// Write captures the SDK's 2026-07-28 request _meta once, then writes.
func (c *RawConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if c.meta.Load() == nil {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			c.capture(r.Params)
		}
	}
	return c.Connection.Write(ctx, m)
}

// Close fails the raw requests in flight, then closes the connection.
func (c *RawConn) Close() error {
	c.end(errRawClosed)
	return c.Connection.Close()
}

// errRawClosed ends the raw requests of a connection closed under them.
var errRawClosed = fmt.Errorf("transport: connection closed: %w", os.ErrClosed)

// end fails every raw request in flight with the connection's end.
func (c *RawConn) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = err
	}
	for id, call := range c.pending {
		delete(c.pending, id)
		call.done <- rawAnswer{err: fmt.Errorf("transport: the connection ended before the answer: %w", err)}
	}
}

// answer hands a raw request its answer; one nobody waits for any more
// (cancelled) is dropped.
func (c *RawConn) answer(id string, r *jsonrpc.Response) {
	c.mu.Lock()
	call := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if call == nil {
		return
	}
	if r.Error != nil {
		call.done <- rawAnswer{err: r.Error}
		return
	}
	if err := CheckAnswer(r); err != nil {
		// No answer: the call's error, the server's fault, never a nil
		// result relayed as a success (answer.go).
		call.done <- rawAnswer{err: err}
		return
	}
	call.done <- rawAnswer{result: r.Result}
}

// progress hands a raw request's progress to it; false if the token is
// none of theirs.
func (c *RawConn) progress(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte(rawPrefix)) {
		return false
	}
	var p struct {
		Token any `json:"progressToken"`
	}
	if _, err := segjson.Parse(params, &p, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return false
	}
	tok, ok := p.Token.(string)
	if !ok || !strings.HasPrefix(tok, rawPrefix) {
		return false
	}
	c.mu.Lock()
	call := c.pending[tok]
	c.mu.Unlock()
	if call != nil && call.progress != nil {
		call.progress(params)
	}
	return true // a late one of ours reaches nobody, as the SDK's would
}

// metaKeys are the 2026-07-28 request _meta fields the SDK's client adds
// to every request.
var metaKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// capture keeps the SDK's 2026-07-28 request _meta fields, from the
// first request that has them, as the members of a JSON object
// (`"key":value,...`, in metaKeys' order).
func (c *RawConn) capture(params json.RawMessage) {
	if !bytes.Contains(params, []byte(mcp.MetaKeyProtocolVersion)) {
		return
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	if _, ok := p.Meta[mcp.MetaKeyProtocolVersion]; !ok {
		return
	}
	var b []byte
	for _, k := range metaKeys {
		v, ok := p.Meta[k]
		if !ok {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendRaw(b, v); err != nil {
			return
		}
	}
	c.meta.CompareAndSwap(nil, &b)
}

// SessionMeta returns the 2026-07-28 request _meta fields the SDK's client
// sends on this connection (protocol version, client info, capabilities)
// as the members of a JSON object (`"key":value,...`), once it sent a
// request; nil before, and on a connection of an earlier protocol.
func (c *RawConn) SessionMeta() []byte {
	if m := c.meta.Load(); m != nil {
		return *m
	}
	return nil
}

// AppendJSONString appends s as a JSON string, as encoding/json writes it
// with HTML escaping off.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// Sent counts the raw requests this connection made.
func (c *RawConn) Sent() uint64 { return c.seq.Load() }
