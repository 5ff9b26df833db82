//go:build !linux && !darwin

package privatefile

import (
	"os"
	"time"
)

// createTemp without flock: a plain temporary file.
func createTemp(dir, pattern string) (*os.File, error) { return os.CreateTemp(dir, pattern) }

// removeAbandoned without flock: a temporary file untouched for an hour
// (no write takes that long) is removed.
func removeAbandoned(path string) {
	if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > time.Hour {
		_ = os.Remove(path)
	}
}
