package catalogcache

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// saltFile is the cache directory's key for the hashes in file names and
// entries: random, made once per directory, mode 0600. With it a file
// name says nothing about the secrets hashed into it (a plain hash of a
// short token can be guessed back; docs/design.md §20).
const saltFile = "salt"

// saltLen is the salt's size in bytes.
const saltLen = 32

// salt is the directory's salt, read (or made) at its first use and kept
// for the Cache's life; the views of one Cache share it.
type salt struct {
	dir  string
	once sync.Once
	key  []byte
	err  error
}

// get returns the salt, making it if the directory has none.
func (s *salt) get() ([]byte, error) {
	s.once.Do(func() { s.key, s.err = loadOrMakeSalt(s.dir) })
	return s.key, s.err
}

// loadOrMakeSalt reads dir's salt or makes one. Two processes making it at
// once agree: each writes its own to a temporary file and links it into
// place, which fails for the second (the file exists), which then reads
// the first's. A salt file is never rewritten.
func loadOrMakeSalt(dir string) ([]byte, error) {
	path := filepath.Join(dir, saltFile)
	if key, err := readSalt(path); !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	key := make([]byte, saltLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	f, err := os.CreateTemp(dir, ".salt.*.tmp")
	if err != nil {
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close())
	if err != nil {
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readSalt(path) // another process made it first
		}
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	return key, nil
}

// readSalt reads a salt file; one that is not a salt is an error (a
// cache keyed by a broken salt would never find its entries again).
func readSalt(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("catalog cache salt: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != saltLen {
		return nil, fmt.Errorf("catalog cache salt %s: %w: not %d hex-encoded bytes", path, ErrUnusable, saltLen)
	}
	return key, nil
}

// mac is the hex HMAC-SHA256 of b under key.
func mac(key, b []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
