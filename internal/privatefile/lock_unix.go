//go:build linux || darwin

package privatefile

import (
	"os"
	"syscall"
)

// createTemp creates a temporary file in dir and holds an exclusive flock
// on it until it is closed: a temporary file that nobody holds belongs to
// a writer that died (abandoned). A file that CleanTemps removed between
// its creation and the lock is made again.
func createTemp(dir, pattern string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err == nil && st.Nlink > 0 {
			return f, nil
		}
		f.Close() // removed before we held it: another name
	}
}

// removeAbandoned removes the temporary file at path unless a writer
// holds it; the removal happens under the lock, so a writer that created
// the file but has not locked it yet finds it gone once it has, and makes
// another (createTemp).
func removeAbandoned(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // held by a live writer (or not lockable): leave it
	}
	_ = os.Remove(path)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
