// Package privatefile writes files only their owner may read, atomically:
// the catalog cache and the token store (docs/design.md §20, §22) keep
// what must neither be read by others nor be seen half written.
package privatefile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file in path's directory
// (created 0700 if missing), mode 0600, synced, then renamed over path, so
// a reader sees the old content or the new, never a part. On failure
// nothing is left behind.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	// CreateTemp makes the file 0600 already; Chmod says so for umasks
	// and platforms that differ.
	err = errors.Join(f.Chmod(0o600), write(f, data), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func write(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}
