//go:build unix

package transport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
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

	once    sync.Once
	stalled chan struct{} // closed once err, later and read are set
	err     error         // the stalled write's error
	later   error         // a later write's: never sent
	read    error         // the reader's: the session's end
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
			return written + n, err
		}
		n, err := w.in.f.Write(p[written:])
		written += n
		switch {
		case err == nil:
			return written, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return written, err
		case n > 0:
			continue // the child reads, however slowly
		}
		return written, w.trip(bound, len(p)-written)
	}
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
		w.out.Close()
	})
	return w.err
}

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
