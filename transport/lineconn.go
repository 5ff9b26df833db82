package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one message read from a stdio peer, as the SDK's own
// stdio connection does (mcp.DefaultMaxLineLength): a peer that writes an
// endless line costs at most this much memory, then its connection ends.
const MaxLine = mcp.DefaultMaxLineLength

// ErrLineTooLong is wrapped by a Lines connection's read error when a
// message exceeds MaxLine; the connection is unusable after it.
var ErrLineTooLong = errors.New("stdio: a message exceeds the maximum line length")

// Lines is an mcp.Transport over a byte stream of newline-delimited
// JSON-RPC messages (MCP's stdio framing), a transport's job done without
// the SDK's IOTransport overheads (docs/design.md §8): the SDK reads each
// message on a goroutine of its own and hands it over a channel, scans it
// once to find its end (json.Decoder) and twice more to decode it, each
// time through a fresh 32 KiB buffer. Lines reads on the caller's
// goroutine, finds the end with a byte search, and decodes the envelope
// once in place (DecodeEnvelope: the SDK's rules; params and results stay
// raw, as the SDK keeps them); writes encode into one reused buffer
// (AppendEnvelope). What the SDK does with the messages is unchanged.
//
// Fidelity: a line that is not a whole JSON value (a peer that
// pretty-prints, against the spec) is joined with the next lines until it
// is, as the SDK's decoder would read it; a JSON array (a batch, before
// 2025-06-18) is split into its messages. Answers to a batch go out one by
// one, not as a batch.
//
// Reader's Close must wake a blocked Read (the stdio generation's reader
// does); Close closes Writer, then Reader.
type Lines struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
}

// Connect implements mcp.Transport; call it once.
func (t *Lines) Connect(context.Context) (mcp.Connection, error) {
	return &lineConn{r: bufio.NewReaderSize(t.Reader, 64<<10), rc: t.Reader, w: t.Writer}, nil
}

// KeepsNoRequestContext: nothing of a request's context outlives the
// request on a Lines connection (Read and Write use it synchronously).
func (t *Lines) KeepsNoRequestContext() {}

type lineConn struct {
	r      *bufio.Reader
	rc     io.Closer
	readMu sync.Mutex
	queue  []jsonrpc.Message // the rest of a batch
	line   []byte            // the current message, when it spans reads
	open   nesting           // how far c.line is scanned, and how deep it is open

	writeMu sync.Mutex
	w       io.WriteCloser
	buf     []byte

	closeOnce sync.Once
	closeErr  error
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	c.line, c.open = c.line[:0], nesting{}
	for {
		data, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			c.line, c.open = c.line[:0], nesting{}
			continue // a blank line between messages
		}
		// A message on one line (the rule) is decoded at once. One that
		// does not decode may go on over the next lines (a peer that
		// pretty-prints): from then on only each new line is scanned,
		// and the message decoded again only once it closed, so it costs
		// one pass and one more decoding, not one parse per line.
		first := c.open.pos == 0
		var msgs []jsonrpc.Message
		if first {
			msgs, err = decodeLine(data)
		}
		if !first || err != nil {
			c.open.scan(c.line)
			if c.open.depth > 0 {
				continue // a message over several lines: read on
			}
			if !first {
				msgs, err = decodeLine(data)
			}
		}
		if cap(c.line) > 1<<20 {
			// Do not keep a huge message's buffer alive while it is relayed
			// (the decoded message holds copies of what it keeps).
			c.line = nil
		}
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			c.line, c.open = c.line[:0], nesting{}
			continue // an empty batch carries nothing
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// nesting follows a JSON text as it arrives: how many objects and arrays
// are open at its end, outside strings. A text is whole, and worth
// decoding, when none is (a broken one fails its decoding then, as the
// SDK's decoder would fail it).
type nesting struct {
	pos               int // bytes of the text scanned
	depth             int
	inString, escaped bool
}

// scan advances over text[n.pos:].
func (n *nesting) scan(text []byte) {
	for _, b := range text[n.pos:] {
		switch {
		case n.escaped:
			n.escaped = false
		case n.inString:
			switch b {
			case '\\':
				n.escaped = true
			case '"':
				n.inString = false
			}
		case b == '"':
			n.inString = true
		case b == '{' || b == '[':
			n.depth++
		case b == '}' || b == ']':
			n.depth--
		}
	}
	n.pos = len(text)
}

// readLine appends the next line to c.line and returns c.line trimmed:
// the message so far, valid until the next Read.
func (c *lineConn) readLine() ([]byte, error) {
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(c.line)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("%w (%d bytes)", ErrLineTooLong, MaxLine)
		}
		if need := len(c.line) + len(chunk); need > cap(c.line) {
			// Double: append grows a large slice by a quarter at a time,
			// which for a 16 MiB line leaves about five times its size
			// in garbage.
			grown := make([]byte, len(c.line), max(need, 2*cap(c.line)))
			copy(grown, c.line)
			c.line = grown
		}
		c.line = append(c.line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSpace(c.line), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(c.line)) > 0:
			return nil, fmt.Errorf("stdio: the stream ended inside a message: %w (%w)", io.ErrUnexpectedEOF, err)
		default:
			return nil, err
		}
	}
}

// decodeLine decodes one message, or a batch (a JSON array) into its
// messages, with the SDK's decoder.
func decodeLine(data []byte) ([]jsonrpc.Message, error) {
	if data[0] != '[' {
		m, err := DecodeEnvelope(data)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("stdio: bad batch: %w", err)
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := DecodeEnvelope(raw)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	data, err := AppendEnvelope(c.buf[:0], msg)
	if err != nil {
		return err
	}
	// One Write per message, its newline included: a write that fails
	// delivered no whole message (stallWatch relies on it).
	c.buf = append(data, '\n')
	_, err = c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil // do not keep a huge message's buffer
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.w.Close(), c.rc.Close())
	})
	return c.closeErr
}
