//go:build linux || darwin

package oauth

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive advisory lock (flock) on path, creating it
// (0600), and returns what releases it. flock locks belong to the open
// file, so two handlers in one process exclude each other as two
// processes do, and a process that dies releases its lock. A holder does
// at most one request to the token endpoint (bounded by its client's
// timeout), so the wait is bounded by wait; a lock still held after it is
// an error naming the file (docs/design.md §22).
func lockFile(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ErrStoreLocked)
		}
		// Polling, not a blocking flock: a blocking one could not be
		// given up, and would pin its goroutine past the wait.
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
