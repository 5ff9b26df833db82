//go:build linux || darwin

package oauth

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestEntryLockExcludes: an entry's lock held (by another process, or
// another handler of this one: flock belongs to the open file) keeps a
// second taker out until it is released; a taker gives up after its wait
// with ErrStoreLocked.
func TestEntryLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.lock")
	unlock, err := lockFile(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockFile(path, 30*time.Millisecond); !errors.Is(err, ErrStoreLocked) {
		t.Fatalf("second lock while held = %v, want ErrStoreLocked", err)
	}
	unlock()
	unlock2, err := lockFile(path, time.Second)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}
