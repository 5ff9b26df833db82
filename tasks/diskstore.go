package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/privatefile"
)

// DiskStore keeps finished tasks as files under a directory (the cache
// directory's tasks/), so a finished result survives a restart of
// mcpkeep (docs/design.md §25). Each record is one file, 0600, written
// atomically (internal/privatefile), named by a digest of its ID so no
// ID can name a path. A file that is not a regular file, is larger than
// MaxBytes, does not parse, or holds another ID is refused with an error
// naming it (matching ErrBadRecord), never trusted.
type DiskStore struct {
	dir string
	max int
}

// DefaultMaxRecordBytes bounds a record file read back from disk.
const DefaultMaxRecordBytes = 8 << 20

// OpenDiskStore opens (creating, 0700) dir. maxBytes bounds each record
// file (0: DefaultMaxRecordBytes). A directory writable by others is
// refused.
func OpenDiskStore(dir string, maxBytes int) (*DiskStore, error) {
	if dir == "" {
		return nil, errors.New("tasks: disk store: no directory")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRecordBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tasks: disk store: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("tasks: disk store: %w", err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("tasks: disk store %s: %w", dir, privatefile.ErrUnsafeDir)
	}
	privatefile.CleanTemps(dir)
	return &DiskStore{dir: dir, max: maxBytes}, nil
}

const recordExt = ".task.json"

func (d *DiskStore) path(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(d.dir, hex.EncodeToString(sum[:16])+recordExt)
}

func (d *DiskStore) Put(_ context.Context, r Record) error {
	data, err := Encode(r)
	if err != nil {
		return fmt.Errorf("tasks: disk store: task %q: %w", r.ID, err)
	}
	if len(data) > d.max {
		return fmt.Errorf("tasks: disk store: task %q: record of %d bytes over the bound of %d", r.ID, len(data), d.max)
	}
	return privatefile.Write(d.path(r.ID), data)
}

func (d *DiskStore) Get(_ context.Context, id string) (Record, error) {
	p := d.path(id)
	r, err := d.read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	if r.ID != id {
		return Record{}, fmt.Errorf("tasks: disk store: %s: %w: holds task %q, not %q", p, ErrBadRecord, r.ID, id)
	}
	return r, nil
}

// read opens p without following a link, refuses anything but a regular
// file within the bound, and decodes it.
func (d *DiskStore) read(p string) (Record, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return Record{}, err
	}
	if !fi.Mode().IsRegular() {
		return Record{}, fmt.Errorf("tasks: disk store: %s: %w: not a regular file (%s)", p, ErrBadRecord, fi.Mode().Type())
	}
	if fi.Size() > int64(d.max) {
		return Record{}, fmt.Errorf("tasks: disk store: %s: %w: %d bytes, over the bound of %d", p, ErrBadRecord, fi.Size(), d.max)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return Record{}, fmt.Errorf("tasks: disk store: %w", err)
	}
	defer f.Close()
	// The file may have grown since Lstat: read one byte past the bound.
	data, err := io.ReadAll(io.LimitReader(f, int64(d.max)+1))
	if err != nil {
		return Record{}, fmt.Errorf("tasks: disk store: %s: %w", p, err)
	}
	r, err := Decode(data, d.max)
	if err != nil {
		return Record{}, fmt.Errorf("tasks: disk store: %s: %w", p, err)
	}
	return r, nil
}

func (d *DiskStore) Delete(_ context.Context, id string) error {
	if err := os.Remove(d.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("tasks: disk store: %w", err)
	}
	return nil
}

// Sweep removes every record expired at now, and every file of ours
// that is not a readable record under its own name (it can never be
// served). It returns
// how many it removed; the first error reading the directory is
// returned after the sweep.
func (d *DiskStore) Sweep(_ context.Context, now time.Time) (int, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return 0, fmt.Errorf("tasks: disk store: %w", err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), recordExt) {
			continue
		}
		p := filepath.Join(d.dir, e.Name())
		r, err := d.read(p)
		if err == nil && now.Before(r.ExpiresAt) && d.path(r.ID) == p {
			continue
		}
		if os.Remove(p) == nil {
			n++
		}
	}
	return n, nil
}
