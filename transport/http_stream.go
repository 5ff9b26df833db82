package transport

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// A load balancer or reverse proxy in front of a server cuts a response
// it sees idle (nginx and AWS ALB after 60 s, GCP after 30 s), and the
// legacy era's standalone event stream is idle most of its life. Such a
// cut ends the stream, not the session: the server still knows it, and
// the calls in flight have streams of their own. The SDK would reopen the
// stream itself, but only MaxRetries times in the session's whole life
// without an event ID between (go-sdk #679), then fail the session. So
// the generation keeps the stream under the SDK instead (keptStream): a
// clean end at an event boundary is followed by a GET of the same stream
// (with Last-Event-ID when the server numbers its events), and the SDK
// reads on as if nothing happened. The session is lost only when the
// reopening says so (refused, 404: the server forgot the session), and
// then the generation ends at once (docs/design.md §8).
const (
	// streamShortLived: a stream that ends sooner than this after it
	// opened was not cut for idling by an intermediary (those wait 30 s
	// and more); the server ends it.
	streamShortLived = 250 * time.Millisecond
	// streamShortMax consecutive short-lived streams end the generation,
	// as any other loss: a server that ends its stream at once, every
	// time, is sent two GETs more and then given up by the budget, not
	// reopened forever. No pause before a reopen: a loss is seen at once.
	streamShortMax = 3
)

// reopenKey marks the context of a GET that reopens a kept stream: the
// round tripper counts it as the standalone stream and does not wrap it
// again.
type reopenKey struct{}

func isReopen(req *http.Request) bool { return req.Context().Value(reopenKey{}) != nil }

// keptStream is the body of the standalone event stream as the SDK sees
// it: the response bodies of the stream's GETs, one after the other.
type keptStream struct {
	t   *genRoundTripper
	req *http.Request // the SDK's GET, re-sent to reopen
	sse sseCursor     // read by Read only

	mu     sync.Mutex
	cur    *trackedBody
	opened time.Time
	closed bool
	short  int // consecutive short-lived streams
	cuts   int // streams reopened so far
}

// keepStream wraps the standalone stream's first body.
func (t *genRoundTripper) keepStream(req *http.Request, b *trackedBody) *keptStream {
	return &keptStream{t: t, req: req, cur: b, opened: t.g.clock.Now()}
}

func (k *keptStream) Read(p []byte) (int, error) {
	for {
		k.mu.Lock()
		cur := k.cur
		k.mu.Unlock()
		n, err := cur.Read(p)
		k.sse.feed(p[:n])
		if err == nil || n > 0 {
			return n, nil // an error is returned again by the next Read
		}
		if !k.reopen(cur, err) {
			return 0, err
		}
	}
}

// reopen judges the end of cur, the current stream, by readErr: false
// when the stream is over (mcpkeep ended it, or the generation ended
// itself for the loss); true when a reopened stream took its place.
func (k *keptStream) reopen(cur *trackedBody, readErr error) bool {
	g := k.t.g
	k.mu.Lock()
	over := k.closed || cur.ctx.Err() != nil
	lived := g.clock.Since(k.opened)
	k.mu.Unlock()
	if over || g.endCtx.Err() != nil {
		return false
	}
	what := fmt.Sprintf("%s: event stream ended: %v", cur.label, readErr)
	if !k.sse.atBoundary() {
		g.noteFailure(what)
		g.endItself(what + " in the middle of an event (a message was lost)")
		return false
	}
	if lived < streamShortLived {
		k.short++
		if k.short >= streamShortMax {
			g.noteFailure(what)
			g.endItself(fmt.Sprintf("%s (%d times in a row within %s of opening: the server ends it)",
				what, k.short, streamShortLived))
			return false
		}
	} else {
		k.short = 0
	}

	resp, err := k.send()
	for wait := streamConflictWait; err == nil && resp.StatusCode == http.StatusConflict && wait <= streamConflictMax; wait *= 2 {
		// The server has not seen the old stream's end yet (an SDK server
		// allows one standalone stream per session): ask again shortly.
		resp.Body.Close()
		t := g.clock.Timer(wait)
		select {
		case <-t.C:
		case <-g.endCtx.Done():
			t.Stop()
			return false
		case <-k.req.Context().Done():
			t.Stop()
			return false
		}
		resp, err = k.send()
	}
	if err != nil {
		if k.req.Context().Err() == nil && g.endCtx.Err() == nil {
			g.endItself(fmt.Sprintf("%s; reopening it failed: %v", what, err))
		}
		return false
	}
	next, _ := resp.Body.(*trackedBody)
	if resp.StatusCode != http.StatusOK || next == nil || next.kind != standaloneStream {
		resp.Body.Close()
		g.endItself(fmt.Sprintf("%s; reopening it: %s (the session is gone)", what, resp.Status))
		return false
	}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		next.Close()
		return false
	}
	k.cur, k.opened = next, g.clock.Now()
	k.cuts++
	cuts := k.cuts
	k.mu.Unlock()
	cur.Close()
	g.log.Debug("http: standalone event stream cut; reopened", "cuts", cuts, "lived", lived, "err", readErr)
	return true
}

// streamConflictWait and streamConflictMax: a reopen answered 409 (the
// server still holds the old stream: it learns of a cut only when it next
// writes or its connection closes) is asked again after 25 ms, doubling,
// the last wait 1.6 s (3.2 s in all); then the generation ends.
const (
	streamConflictWait = 25 * time.Millisecond
	streamConflictMax  = 1600 * time.Millisecond
)

// send sends the stream's GET again, with the last event ID seen and the
// current bearer token; a 401 to it is authorized as the SDK would (a
// refresh) and sent once more (http_auth.go).
func (k *keptStream) send() (*http.Response, error) {
	req := k.req.Clone(context.WithValue(k.req.Context(), reopenKey{}, true))
	if id := k.sse.lastID; id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	k.t.g.bearer(req)
	resp, err := k.t.RoundTrip(req)
	if err != nil || !k.t.g.reauthorize(req, resp) {
		return resp, err
	}
	req = req.Clone(req.Context())
	k.t.g.bearer(req)
	return k.t.RoundTrip(req)
}

// Close ends the stream for good; the teardown may close the current body
// first, or at the same time.
func (k *keptStream) Close() error {
	k.mu.Lock()
	k.closed = true
	cur := k.cur
	k.mu.Unlock()
	return cur.Close()
}

// sseCursor follows the event stream's framing (text/event-stream, the
// HTML Living Standard's rules): whether the bytes so far end between
// events, and the last event ID dispatched.
type sseCursor struct {
	lastID  string
	line    []byte // the current line, up to maxSSELine bytes
	long    bool   // the current line was longer
	inLine  bool   // bytes of the current line were seen
	pending bool   // a field line since the last dispatch
	afterCR bool   // the previous byte was a CR (a following LF is part of it)
	id      string // the id field of the pending event
	hasID   bool
}

// maxSSELine bounds what the cursor keeps of a line: enough for an id.
const maxSSELine = 1024

func (c *sseCursor) feed(p []byte) {
	for _, b := range p {
		if c.afterCR {
			c.afterCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\r':
			c.afterCR = true
			c.endLine()
		case '\n':
			c.endLine()
		default:
			c.inLine = true
			if len(c.line) < maxSSELine {
				c.line = append(c.line, b)
			} else {
				c.long = true
			}
		}
	}
}

func (c *sseCursor) endLine() {
	line, long := c.line, c.long
	c.line, c.long, c.inLine = c.line[:0], false, false
	switch {
	case len(line) == 0:
		if c.hasID {
			c.lastID = c.id
		}
		c.pending, c.hasID = false, false
	case line[0] == ':':
		// A comment: part of no event.
	default:
		c.pending = true
		name, value := string(line), ""
		for i, b := range line {
			if b == ':' {
				name, value = string(line[:i]), string(line[i+1:])
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
				break
			}
		}
		if name == "id" && !long {
			c.id, c.hasID = value, true
		}
	}
}

// atBoundary reports whether the bytes so far end between events: a cut
// there loses no part of a message.
func (c *sseCursor) atBoundary() bool { return !c.inLine && !c.pending }
