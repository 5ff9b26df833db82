//go:build unix

package transport

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// stderrReader is the child's stderr as the forwarder reads it. It keeps
// reading after the child exits (grandchildren may still write), but once
// the child was reaped it reports, through caughtUp, the moment everything
// the child wrote has been read: then, since the forwarder asks for more
// only when it holds no complete line, every line of the child is in the
// tail. wait holds back the loss signal until then (boundedly), so the tail
// is complete when the supervisor logs the loss.
type stderrReader struct {
	f *os.File
	// exited is closed by childExited, after the read deadline is set.
	exited chan struct{}
	// caughtUp is closed by Read once the child's output is consumed.
	caughtUp chan struct{}
	// draining: reader goroutine only.
	draining bool
}

func newStderrReader(f *os.File) *stderrReader {
	return &stderrReader{f: f, exited: make(chan struct{}), caughtUp: make(chan struct{})}
}

// childExited is called once, by the waiter, when the child was reaped.
func (r *stderrReader) childExited() {
	r.f.SetReadDeadline(time.Unix(1, 0)) // in the past: wakes a blocked Read
	close(r.exited)
}

func (r *stderrReader) Read(p []byte) (int, error) {
	if r.draining {
		n, err := readNow(r.f, p)
		if !errors.Is(err, syscall.EAGAIN) {
			return n, err
		}
		r.draining = false
		close(r.caughtUp)
		// Grandchildren may write on: read as usual until EOF or Close.
	}
	n, err := r.f.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-r.exited // only childExited sets a deadline
		r.f.SetReadDeadline(time.Time{})
		r.draining = true
		if n > 0 {
			return n, nil
		}
		return r.Read(p)
	}
	return n, err
}
