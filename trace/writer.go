package trace

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
)

// Writer writes a trace: the header at once, then one line per event. It
// is safe for concurrent use (several supervisors may share one Writer)
// and cheap enough to call from a supervisor's loop: Write only encodes
// into a buffer. Call Flush to push buffered lines out and Close at the
// end. The first write error sticks: later calls do nothing and Flush and
// Close return it.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	buf    *bufio.Writer
	enc    *json.Encoder
	header Header
	n      int
	err    error
	closed bool
}

// NewWriter writes h (Version is set to 1 when zero) and returns the Writer.
func NewWriter(w io.Writer, h Header) *Writer {
	if h.Version == 0 {
		h.Version = Version
	}
	buf := bufio.NewWriter(w)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	tw := &Writer{w: w, buf: buf, enc: enc, header: h}
	tw.err = enc.Encode(h)
	warmEvents()
	return tw
}

// warmEvents builds encoding/json's encoder for an event line (it builds
// one per type, once per process, on its first use), so that the first
// Write, often a lazy server's start on demand while a host waits, costs
// what the others do (about 80 µs less in a fresh process; docs/design.md
// §20).
func warmEvents() {
	_ = json.NewEncoder(io.Discard).Encode(Event{Detail: map[string]string{DetailErr: ""}, NextRetry: 1}.wire())
}

// Header returns the header written.
func (w *Writer) Header() Header { return w.header }

// Write appends e. Events after Close are dropped.
func (w *Writer) Write(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return
	}
	if w.err = w.enc.Encode(e.wire()); w.err == nil {
		w.n++
	}
}

// Events returns how many events were written.
func (w *Writer) Events() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Flush writes out buffered lines and returns the first error so far.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	return w.err
}

// Close flushes, closes the underlying writer when it is an io.Closer,
// and drops later events. It is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	if c, ok := w.w.(io.Closer); ok {
		if err := c.Close(); w.err == nil {
			w.err = err
		}
	}
	return w.err
}
