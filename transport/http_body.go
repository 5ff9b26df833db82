package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of the response bodies the SDK reads whole (docs/design.md
// §8). Event streams are not bounded as a whole, only per event, by the
// SDK (MaxEventSize).
const (
	// MaxPlainBody bounds a 2xx answer that is not an event stream (a
	// call's application/json answer): the SDK's own bound on one
	// message.
	MaxPlainBody int64 = mcp.DefaultMaxEventSize
	// MaxErrorBody bounds the body of a non-2xx answer, which the SDK
	// reads only to find a JSON-RPC error in it.
	MaxErrorBody int64 = 64 << 10
)

// ErrBodyTooLarge: a response body passed its bound (MaxPlainBody, or
// MaxErrorBody for an error status). The request was sent: the server
// answered it. Errors that match it are *BodyTooLargeError.
var ErrBodyTooLarge = errors.New("response body too large")

// BodyTooLargeError names the request whose answer was too large.
type BodyTooLargeError struct {
	Method string // the request's HTTP method
	URL    string // the endpoint, redacted
	Status string // the response's status line
	Limit  int64  // the bound it passed, in bytes
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("http: %s %s: %s: the response body passed %s and was abandoned "+
		"(the server sent more than one MCP message may hold, or a body that never ends)",
		e.Method, e.URL, e.Status, sizeString(e.Limit))
}

// Is makes errors.Is(err, ErrBodyTooLarge) hold.
func (e *BodyTooLargeError) Is(target error) bool { return target == ErrBodyTooLarge }

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readAhead reads the plain 2xx answer to a call in RoundTrip, up to
// MaxPlainBody: the SDK reads such a body whole and, when the read fails,
// fails the whole connection, not the one request. Read here, a body too
// large fails only its request, as an error of the HTTP client (the SDK
// returns it to the caller; the connection stays). ok is false when the
// body passed the bound or its read failed; err is then the request's
// error and resp.Body is closed.
func readAhead(resp *http.Response, method, url string) (ok bool, err error) {
	limit := MaxPlainBody
	tooLarge := &BodyTooLargeError{Method: method, URL: url, Status: resp.Status, Limit: limit}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return false, tooLarge
	}
	buf, err := readUpTo(resp.Body, limit+1, resp.ContentLength)
	orig := resp.Body
	switch {
	case err != nil:
		orig.Close()
		return false, fmt.Errorf("http: %s %s: %s: reading the response body: %w", method, url, resp.Status, err)
	case int64(len(buf)) > limit:
		orig.Close()
		return false, tooLarge
	}
	resp.Body = readCloser{bytes.NewReader(buf), orig}
	return true, nil
}

// readUpTo reads r to its end, or to max bytes. Its buffer grows by
// doubling but never past max (bytes.Buffer would double a full 16 MiB
// to 32 MiB for the one byte that tells the bound passed); size, when
// known, sizes it at once.
func readUpTo(r io.Reader, max, size int64) ([]byte, error) {
	c := int64(64 << 10)
	if size >= 0 {
		c = size + 1 // one more, to see the end
	}
	buf := make([]byte, 0, min(c, max))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= max {
				return buf, nil
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf))+1, max))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// cappedBody fails a body read past its limit (the bodies the SDK reads
// but cannot be read ahead: error statuses, whose status the SDK acts on
// whatever the body, and plain answers to other methods). The SDK ignores
// the read error of an error status's body: the status alone decides.
type cappedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed
	err  *BodyTooLargeError
	// over runs once, when the bound is passed.
	over   func(*BodyTooLargeError)
	passed bool
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.passed {
		return 0, c.err
	}
	if c.left <= 0 {
		// One byte more tells a body of exactly the limit from a larger one.
		var one [1]byte
		n, err := c.rc.Read(one[:])
		if n == 0 {
			return 0, err
		}
		c.passed = true
		if c.over != nil {
			c.over(c.err)
		}
		return 0, c.err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// expectsAnswer reports whether req carries a JSON-RPC call, the only
// message whose plain answer the SDK reads (it closes the answer to a
// notification or a response unread, so reading that ahead would only
// hold the write). It reads the members before "params" (the SDK writes
// jsonrpc, id, method, then params), so a large call costs no scan; a body
// it cannot read counts as a call.
func expectsAnswer(req *http.Request) bool {
	if req.GetBody == nil {
		return true
	}
	body, err := req.GetBody()
	if err != nil {
		return true
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return true
	}
	var id, method bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		switch tok {
		case "id":
			id = true
		case "method":
			method = true
		case "result", "error":
			return false // a response
		case "params":
			if method { // the SDK's order: an id would have come before
				return id
			}
		}
		if id && method {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return true
		}
	}
	return id && method
}
