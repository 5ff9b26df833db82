package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// HostStdio is the server side of a stdio connection to a host: the
// SDK's mcp.IOTransport, message for message and error for error (its
// framing, its frame bound, its batches, a batch refused from 2025-06-18
// on), with the envelope decoded and encoded by DecodeEnvelope and
// AppendEnvelope instead of the SDK's fresh 32 KiB decoders
// (docs/design.md §24). TestHostStdioReadsWhatIOTransportReads holds it
// to that.
//
// As with the SDK's, a reader goroutine reads Reader; it ends when a read
// fails, so Close wakes it only where closing Reader ends a blocked read
// (a pipe does; a terminal may not, and then the goroutine ends with the
// process).
type HostStdio struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLineLength bounds one inbound frame; 0 or less is
	// mcp.DefaultMaxLineLength. (The SDK's IOTransport reads a negative
	// value as no bound at all; a host's frames are bounded here whatever
	// it asks: docs/design.md §19.)
	MaxLineLength int
}

// Connect implements mcp.Transport; call it once.
func (t *HostStdio) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	c := &hostConn{r: t.Reader, w: t.Writer, incoming: make(chan rawOrErr), closed: make(chan struct{}),
		baton: make(chan *frameReader), readEnd: make(chan struct{})}
	lim := &frameLimit{r: c.r, limit: limit}
	go c.readLoop(&frameReader{lim: lim, dec: json.NewDecoder(lim)})
	return c, nil
}

// A Diverter is a connection whose reader can give a message to a taker
// instead of the SDK's reader (docs/design.md §24: the proxy's fast path
// relays a host's call from the goroutine that read it, with no hand-over
// between goroutines before the call goes out).
type Diverter interface {
	// Divert sets take, which the reader calls with each message it reads
	// on its own (not one of a batch), in order. When take returns a run,
	// the message is the taker's: the SDK never reads it, another
	// goroutine reads on, and run runs on the reader's goroutine.
	Divert(take func(jsonrpc.Message) (run func()))
}

type rawOrErr struct {
	raw json.RawMessage
	msg jsonrpc.Message // raw decoded, when the reader decoded it already
	err error
}

type hostConn struct {
	r        io.ReadCloser
	w        io.WriteCloser
	incoming chan rawOrErr
	closed   chan struct{}

	// take is Divert's; baton hands the reading to a goroutine waiting
	// for it; readEnd is closed when the reading ended.
	take    atomic.Pointer[func(jsonrpc.Message) func()]
	baton   chan *frameReader
	readEnd chan struct{}

	queue []jsonrpc.Message // the rest of a batch (the SDK's reader only)

	mu       sync.Mutex // guards below
	version  string     // the negotiated protocol version, once known
	initID   *jsonrpc.ID
	batches  map[jsonrpc.ID]*hostBatch
	writeBuf []byte

	closeOnce sync.Once
	closeErr  error
}

// Divert implements Diverter.
func (c *hostConn) Divert(take func(jsonrpc.Message) func()) { c.take.Store(&take) }

// hostBatch is an incoming batch's calls waiting for their answers.
type hostBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// errTrailing is the SDK's error for a second value on a frame's line.
var errTrailing = errors.New("invalid trailing data at the end of stream")

// errFrame is the SDK's error for a frame over the bound.
var errFrame = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

// frameReader is the reading of the host's stream: whichever goroutine
// holds it reads.
type frameReader struct {
	lim *frameLimit
	dec *json.Decoder
}

// next reads a frame as the SDK's ioConn does: a JSON value followed by
// nothing but a line end, within the bound.
func (f *frameReader) next() (json.RawMessage, error) {
	var raw json.RawMessage
	err := f.dec.Decode(&raw)
	if err == nil {
		var tr [1]byte
		if n, rerr := f.dec.Buffered().Read(tr[:]); n > 0 {
			if tr[0] != '\n' && tr[0] != '\r' {
				err = errTrailing
			}
		} else if rerr != nil && rerr != io.EOF {
			err = rerr
		}
	}
	f.lim.count = 0
	return raw, err
}

// standbyIdle is how long a reader that ran a diverted message waits to
// read again before it ends.
const standbyIdle = 5 * time.Second

// readLoop reads frames and hands them to the SDK's reader, or to the
// taker (Divert): then it passes the reading on and runs the taker's run,
// and waits to read again.
func (c *hostConn) readLoop(f *frameReader) {
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	for {
		raw, err := f.next()
		var msg jsonrpc.Message
		if take := c.take.Load(); take != nil && err == nil && !isBatch(raw) {
			if m, derr := DecodeEnvelope(raw); derr == nil {
				if run := (*take)(m); run != nil {
					select {
					case c.baton <- f:
					default:
						go c.readLoop(f)
					}
					run()
					if f = c.standby(&idle); f == nil {
						return
					}
					continue
				}
				msg = m
			}
		}
		select {
		case c.incoming <- rawOrErr{raw, msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			close(c.readEnd)
			return
		}
	}
}

// standby waits for the reading (nil: the connection ended, or nothing
// came for standbyIdle). idle is the goroutine's timer, made once.
func (c *hostConn) standby(idle **time.Timer) *frameReader {
	if *idle == nil {
		*idle = time.NewTimer(standbyIdle)
	} else {
		(*idle).Reset(standbyIdle)
	}
	select {
	case f := <-c.baton:
		return f
	case <-c.readEnd:
	case <-c.closed:
	case <-(*idle).C:
	}
	return nil
}

// isBatch reports whether a frame is a JSON array.
func isBatch(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// frameLimit bounds the bytes read for one frame.
type frameLimit struct {
	r     io.Reader
	limit int
	count int
}

func (r *frameLimit) Read(p []byte) (int, error) {
	if r.count >= r.limit {
		return 0, errFrame
	}
	if len(p) > r.limit-r.count {
		p = p[:r.limit-r.count]
	}
	n, err := r.r.Read(p)
	r.count += n
	return n, err
}

func (c *hostConn) SessionID() string { return "" }

func (c *hostConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	var in rawOrErr
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in = <-c.incoming:
		if in.err != nil {
			return nil, in.err
		}
	case <-c.closed:
		return nil, io.EOF
	}
	var msgs []jsonrpc.Message
	var batch bool
	if in.msg != nil {
		msgs = []jsonrpc.Message{in.msg}
	} else {
		var err error
		if msgs, batch, err = decodeFrame(in.raw); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if batch && version >= "2025-06-18" {
		return nil, fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", "2025-06-18", version)
	}
	c.queue = msgs[1:]
	if batch {
		var b *hostBatch
		for _, m := range msgs {
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				if b == nil {
					b = &hostBatch{unresolved: map[jsonrpc.ID]int{}}
				}
				if _, dup := b.unresolved[req.ID]; dup {
					return nil, fmt.Errorf("duplicate message ID %q", req.ID)
				}
				b.unresolved[req.ID] = len(b.responses)
				b.responses = append(b.responses, nil)
			}
		}
		if b != nil {
			if err := c.addBatch(b); err != nil {
				return nil, err
			}
		}
	}
	if req, ok := msgs[0].(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() && len(msgs) == 1 {
		c.mu.Lock()
		id := req.ID
		c.initID = &id
		c.mu.Unlock()
	}
	return msgs[0], nil
}

// decodeFrame decodes a frame as the SDK's readBatch does: an array is a
// batch (an empty one an error), anything else one message.
func decodeFrame(data []byte) ([]jsonrpc.Message, bool, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var raws []json.RawMessage
		if err := checkDepth(data); err == nil {
			if _, err := segjson.Parse(data, &raws, segjson.DontMatchCaseInsensitiveStructFields); err == nil {
				if len(raws) == 0 {
					return nil, true, errors.New("empty batch")
				}
				msgs := make([]jsonrpc.Message, 0, len(raws))
				for _, raw := range raws {
					m, err := DecodeEnvelope(raw)
					if err != nil {
						return nil, true, err
					}
					msgs = append(msgs, m)
				}
				return msgs, true, nil
			}
		}
	}
	m, err := DecodeEnvelope(data)
	return []jsonrpc.Message{m}, false, err
}

func (c *hostConn) addBatch(b *hostBatch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range b.unresolved {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("%w: batch contains previously seen request %v", errInvalidRequest, id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*hostBatch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// errInvalidRequest is the SDK's jsonrpc2.ErrInvalidRequest (errors.Is
// matches it by code).
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// Write sends one message; an answer that completes a batch sends the
// batch's answers as one array, one that does not waits for the rest.
func (c *hostConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.learnVersionLocked(resp)
		if b, ok := c.batches[resp.ID]; ok {
			idx := b.unresolved[resp.ID]
			b.responses[idx] = resp
			delete(b.unresolved, resp.ID)
			delete(c.batches, resp.ID)
			if len(b.unresolved) > 0 {
				return nil
			}
			// As the SDK writes a batch: an array of the messages,
			// marshalled (so HTML characters escaped) by encoding/json.
			raws := make([]json.RawMessage, 0, len(b.responses))
			for _, r := range b.responses {
				raw, err := AppendEnvelope(nil, r)
				if err != nil {
					return fmt.Errorf("encoding batch message: %w", err)
				}
				raws = append(raws, raw)
			}
			data, err := json.Marshal(raws)
			if err != nil {
				return err
			}
			return c.writeLocked(append(data, '\n'))
		}
	}
	buf, err := AppendEnvelope(c.writeBuf[:0], msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	return c.writeLocked(append(buf, '\n'))
}

// writeLocked writes buf, keeping it for the next message unless huge.
func (c *hostConn) writeLocked(buf []byte) error {
	_, err := c.w.Write(buf)
	if cap(buf) <= 1<<20 {
		c.writeBuf = buf[:0]
	} else {
		c.writeBuf = nil
	}
	return err
}

// learnVersionLocked reads the negotiated protocol version off the answer
// to the host's initialize, as the SDK's connection learns it from its
// session.
func (c *hostConn) learnVersionLocked(resp *jsonrpc.Response) {
	if c.initID == nil || resp.ID != *c.initID {
		return
	}
	c.initID = nil
	if resp.Error != nil {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &r) == nil && r.ProtocolVersion != "" {
		c.version = r.ProtocolVersion
	}
}

func (c *hostConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}
