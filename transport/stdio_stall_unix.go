//go:build unix

package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stallWatch is the write watchdog of a stdio generation (docs/design.md
// §19): the SDK writes a whole message in one Write, under its own lock,
// and a child that stops reading its stdin would block that Write, and
// every request behind it, for as long as it lives. Each Write gets a
// deadline of the bound, renewed while the child takes anything, so a
// slow reader is never cut; a bound with no progress at all ends the
// generation: the write fails, and the reader (stallReader) reports the
// end, which ends the SDK session. Deadlines are real time: they belong
// to the OS's poller, as the pipe does.
type stallWatch struct {
	log    *slog.Logger
	server string
	gen    uint64
	in     *stdinWriter
	out    *stdoutReader
	bound  atomic.Int64 // time.Duration

	once       sync.Once
	brokenOnce sync.Once     // the child's stdin broke
	stalled    chan struct{} // closed once err, later and read are set
	err        error         // the stalled write's error
	later      error         // a later write's: never sent
	read       error         // the reader's: the session's end
}

func newStallWatch(log *slog.Logger, server string, gen uint64, in *stdinWriter, out *stdoutReader) *stallWatch {
	w := &stallWatch{log: log, server: server, gen: gen, in: in, out: out, stalled: make(chan struct{})}
	w.bound.Store(int64(DefaultWriteBound))
	return w
}

func (w *stallWatch) setBound(d time.Duration) {
	if d > 0 {
		w.bound.Store(int64(d))
	}
}

func (w *stallWatch) Write(p []byte) (int, error) {
	select {
	case <-w.stalled:
		return 0, w.later
	default:
	}
	bound := time.Duration(w.bound.Load())
	written := 0
	for {
		if err := w.in.f.SetWriteDeadline(time.Now().Add(bound)); err != nil {
			// Not a pollable pipe: no deadline to be had.
			n, err := w.in.Write(p[written:])
			return written + n, w.undelivered(err)
		}
		n, err := w.in.f.Write(p[written:])
		written += n
		switch {
		case err == nil:
			return written, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return written, w.undelivered(err)
		case n > 0:
			continue // the child reads, however slowly
		}
		err = w.trip(bound, len(p)-written)
		if written < len(bytes.TrimRight(p, " \t\r\n")) {
			// The message's last byte never reached the pipe: no server
			// can have acted on it. Not sent: it waits for the next
			// generation (docs/design.md §19).
			err = fmt.Errorf("%w (%d of %d bytes written: %w)", err, written, len(p), mcp.ErrConnectionClosed)
		}
		return written, err
	}
}

// brokenGrace is how long the reader may drain what a child whose stdin
// broke had written before the generation is ended for it.
const brokenGrace = time.Second

// undelivered classifies a failed write (docs/design.md §8). A message
// goes out in one Write ending in its newline, so a write that failed
// because the child's stdin is gone (EPIPE: the child died or closed it)
// or because mcpkeep closed it (the teardown's stdin grace) delivered no
// whole message: the request was not sent, and says so the way the SDK
// does, with mcp.ErrConnectionClosed, so the call takes the outage path
// instead of failing with "write |1: broken pipe". A child whose stdin
// broke can take no more requests: unless its exit ends the generation
// first, the reader is closed after brokenGrace, which ends it.
func (w *stallWatch) undelivered(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE):
		w.brokenOnce.Do(func() {
			w.log.Debug("stdio: the server's stdin is closed; ending the generation", "err", err)
			time.AfterFunc(brokenGrace, func() { w.out.Close() })
		})
	case !errors.Is(err, os.ErrClosed):
		return err
	}
	return fmt.Errorf("stdio: server %q gen %d: the request was not delivered, its stdin is closed (%v): %w",
		w.server, w.gen, err, mcp.ErrConnectionClosed)
}

func (w *stallWatch) Close() error { return w.in.Close() }

// trip ends the generation: later writes fail at once, and the SDK's
// reader, woken by closing the stdout side, ends the session.
func (w *stallWatch) trip(bound time.Duration, pending int) error {
	w.once.Do(func() {
		w.err = fmt.Errorf("%w: server %q gen %d took nothing of a write for %s (%d bytes pending)",
			ErrStalled, w.server, w.gen, bound, pending)
		w.later = fmt.Errorf("%w (%w)", w.err, mcp.ErrConnectionClosed)
		w.read = fmt.Errorf("%w (%w)", w.err, io.EOF)
		close(w.stalled)
		w.log.Warn("stdio: the server stopped reading its stdin; ending the generation",
			"bound", bound, "pending", pending)
		time.AfterFunc(stallDrain, func() { w.out.Close() })
	})
	return w.err
}

// stallDrain is how long the reader outlives a stall. Requests queued
// behind the stalled write (the SDK writes one message at a time) are
// registered as in flight; the reader's end would retire them with its
// error, as lost, though none of their bytes went out. Given a moment,
// each takes its turn at Write, fails with w.later, and is retired as
// never sent (docs/design.md §19: calls not yet written wait for the next
// generation). The generation then ends with the reader.
const stallDrain = 250 * time.Millisecond

// stallReader is the child's stdout as the SDK reads it: once the watch
// tripped, any read error is the stall, so the session's end names it.
type stallReader struct {
	r *stdoutReader
	w *stallWatch
}

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		select {
		case <-s.w.stalled:
			return n, s.w.read
		default:
		}
	}
	return n, err
}

func (s stallReader) Close() error { return s.r.Close() }

// BoundWrites implements WriteBounder.
func (g *stdioGen) BoundWrites(d time.Duration) { g.watch.setBound(d) }
