//go:build unix

package transport

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// The pipes of a stdio child, as mcpkeep's side sees them.

// stdoutEOFHold bounds how long a stdout EOF waits for the child to be
// reaped (normally microseconds).
const stdoutEOFHold = 200 * time.Millisecond

// stdoutReader is the child's stdout as the SDK reads it. While the child
// runs it reads the pipe. Once the child has exited, a grandchild may still
// hold the write end, so no EOF would come: childExited interrupts a
// blocked read, and from then on reads take only what the pipe already
// holds and then report io.EOF. Loss is seen at once, and a reply the child
// wrote just before exiting is still delivered. Either way, the SDK sees
// EOF only after the child was reaped (Exit().Status is set).
type stdoutReader struct {
	f *os.File
	// exited is closed by childExited, after the read deadline is set.
	exited chan struct{}
	// undeadline clears the deadline once, for draining (reader goroutine).
	undeadline sync.Once
	// closed is closed by Close: reads stop, but the descriptor stays open
	// until release, so a child still writing while it shuts down fills
	// the pipe instead of dying of SIGPIPE.
	closed      chan struct{}
	closeOnce   sync.Once
	releaseOnce sync.Once
	// done is closed once a Read has reported the end (EOF or an error)
	// or Close was called: the teardown may close the pipe after that
	// without taking anything from the reader.
	done     chan struct{}
	doneOnce sync.Once
}

func (r *stdoutReader) finish() { r.doneOnce.Do(func() { close(r.done) }) }

func newStdoutReader(f *os.File) *stdoutReader {
	return &stdoutReader{f: f, exited: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{})}
}

// childExited is called once, by the waiter, when the child was reaped.
func (r *stdoutReader) childExited() {
	r.f.SetReadDeadline(time.Unix(1, 0)) // in the past: wakes a blocked Read
	close(r.exited)
}

func (r *stdoutReader) Read(p []byte) (n int, err error) {
	defer func() {
		if err != nil {
			r.finish()
		}
	}()
	select {
	case <-r.closed:
		return 0, os.ErrClosed
	case <-r.exited:
		return r.drain(p)
	default:
	}
	n, err = r.f.Read(p)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Only childExited and Close set a deadline, and each closes its
		// channel right after.
		select {
		case <-r.closed:
			return 0, os.ErrClosed
		case <-r.exited:
		}
		if n > 0 {
			return n, nil
		}
		return r.drain(p)
	case err == io.EOF:
		// Every writer is gone, so the child is exiting: hold the EOF
		// until it is reaped, so that Exit() is complete when the SDK
		// sees the loss. Bounded, for a child that closed stdout and
		// runs on.
		t := time.NewTimer(stdoutEOFHold)
		select {
		case <-r.exited:
		case <-t.C:
		}
		t.Stop()
	}
	return n, err
}

// drain reads what the pipe holds without waiting for writers.
func (r *stdoutReader) drain(p []byte) (int, error) {
	r.undeadline.Do(func() { r.f.SetReadDeadline(time.Time{}) })
	n, err := readNow(r.f, p)
	if errors.Is(err, syscall.EAGAIN) {
		return 0, io.EOF // nothing left from the dead child
	}
	return n, err
}

// readNow makes one read of f that does not wait for data: EAGAIN when the
// pipe is empty but writers remain, io.EOF when none remain.
func readNow(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		n    int
		rerr error
	)
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EINTR {
				return true // one attempt: never wait for readiness
			}
		}
	})
	switch {
	case err != nil: // closed
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	default:
		return n, nil
	}
}

// Close ends reading (the SDK calls it when the session closes) and wakes
// a blocked Read. It does not close the descriptor: the child may still
// be writing while it shuts down, and a closed read end would kill it with
// SIGPIPE instead of letting it exit on its own. release closes it once the
// child was reaped.
func (r *stdoutReader) Close() error {
	r.closeOnce.Do(func() {
		r.f.SetReadDeadline(time.Unix(1, 0))
		close(r.closed)
	})
	r.finish()
	return nil
}

// release closes the descriptor (the teardown, after the child's end).
func (r *stdoutReader) release() {
	r.Close()
	r.releaseOnce.Do(func() { r.f.Close() })
}

// stdinWriter is the child's stdin; Close is idempotent, for the same
// reason.
type stdinWriter struct {
	f         *os.File
	closeOnce sync.Once
}

func (w *stdinWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *stdinWriter) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.f.Close() })
	return err
}
