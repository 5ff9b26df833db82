// Package privatefile writes files only their owner may read, atomically
// and durably: the catalog cache and the token store (docs/design.md §20,
// §22) keep what must neither be read by others, nor be seen half
// written, nor be left behind in a temporary file by a crash.
package privatefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafeDir: the directory is writable by its group or by everyone,
// so another user could replace or remove what is written there.
var ErrUnsafeDir = errors.New("directory is writable by group or others")

// Write replaces path with data: a temporary file in path's directory
// (created 0700 if missing), mode 0600, synced, then renamed over path,
// and the directory synced, so a reader sees the old content or the new,
// never a part, and the new survives a power cut once Write returned. On
// failure nothing is left behind; the temporary files of writers that
// crashed are removed first (a temporary holds the same secret).
//
// A directory writable by group or others is refused (ErrUnsafeDir,
// naming it).
func Write(path string, data []byte) error { return write(path, data, nil) }

// write is Write with a hook between the synced temporary file and its
// rename, for the test that crashes a writer there.
func write(path string, data []byte, beforeRename func()) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	CleanTemps(dir)
	f, err := createTemp(dir, "."+filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	// CreateTemp makes the file 0600 already; Chmod says so for umasks
	// and platforms that differ.
	err = errors.Join(f.Chmod(0o600), writeSync(f, data))
	if err == nil && beforeRename != nil {
		beforeRename()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	// Closed after the rename: the open file's lock tells CleanTemps that
	// its writer is alive (tempLock).
	err = errors.Join(err, f.Close())
	if err != nil {
		os.Remove(tmp) // gone already after a rename
	}
	return err
}

// tempSuffix ends the temporary files' names: "." + base + random + it.
const tempSuffix = ".tmp"

// checkDir refuses a directory others may write to.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("privatefile: %s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("privatefile: %s: %w (mode %v): run chmod go-w on it", dir, ErrUnsafeDir, perm)
	}
	return nil
}

// CleanTemps removes the temporary files in dir that no writer holds: a
// writer that crashed between creating one and renaming it left it, with
// the secret it was writing. Failures are ignored: the next call tries
// again.
func CleanTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		name := d.Name()
		if !d.Type().IsRegular() || !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tempSuffix) {
			continue
		}
		removeAbandoned(filepath.Join(dir, name))
	}
}

func writeSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, fs.ErrInvalid) {
		err = nil // a platform or file system that cannot sync a directory
	}
	return errors.Join(err, d.Close())
}
