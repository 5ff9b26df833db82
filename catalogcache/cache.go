package catalogcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/internal/privatefile"
)

// ErrUnusable: a cache file exists but cannot be used (corrupt, of another
// format version, or of another server). It is a warning, never a failure.
var ErrUnusable = errors.New("catalog cache file unusable")

// Cache is a directory of entries, one file per server identity.
type Cache struct {
	dir string
}

// New returns the cache in dir; the directory is created (0700) at the
// first write.
func New(dir string) *Cache { return &Cache{dir: dir} }

// DefaultDir is os.UserCacheDir()/mcpkeep.
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("catalog cache: %w", err)
	}
	return filepath.Join(d, "mcpkeep"), nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// For returns the store of server sc.
func (c *Cache) For(sc config.Server) *Store {
	key := Key(sc)
	return &Store{dir: c.dir, name: sc.Name, key: key,
		path: filepath.Join(c.dir, sc.Name+"."+key[:16]+".json")}
}

// identity is what makes a server that server. Secrets (env and header
// values) are in it only to be hashed.
type identity struct {
	Transport string            `json:"t"`
	Command   string            `json:"c,omitempty"`
	Args      []string          `json:"a,omitempty"`
	Dir       string            `json:"d,omitempty"`
	URL       string            `json:"u,omitempty"`
	Env       map[string]string `json:"e,omitempty"`
	Headers   map[string]string `json:"h,omitempty"`
	OAuth     *config.OAuth     `json:"o,omitempty"`
}

// Key is the hex SHA-256 of sc's identity (json.Marshal sorts map keys,
// so equal servers hash equal).
func Key(sc config.Server) string {
	b, err := json.Marshal(identity{Transport: sc.Transport, Command: sc.Command, Args: sc.Args, Dir: sc.Dir,
		URL: sc.URL, Env: sc.Env, Headers: sc.Headers, OAuth: sc.OAuth})
	if err != nil {
		// Only strings and string maps: cannot fail. Hash the name alone
		// rather than panic; the entry check still rejects a mismatch.
		b = []byte(sc.Name)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Store is one server's entry in a cache.
type Store struct {
	dir, name, key, path string
}

// Path is the entry's file.
func (s *Store) Path() string { return s.path }

// Load returns the entry, or (nil, nil) when there is none. An unusable
// file is an error matching ErrUnusable.
func (s *Store) Load() (*Entry, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog cache %s: %w: %w", s.path, ErrUnusable, err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("catalog cache %s: %w: %w", s.path, ErrUnusable, err)
	}
	switch {
	case e.Version != formatVersion:
		return nil, fmt.Errorf("catalog cache %s: %w: format version %d, want %d", s.path, ErrUnusable, e.Version, formatVersion)
	case e.Server != s.name || e.Key != s.key:
		return nil, fmt.Errorf("catalog cache %s: %w: written for another server (%q)", s.path, ErrUnusable, e.Server)
	}
	return &e, nil
}

// Save writes e atomically with mode 0600, stamped with the store's
// server name, key and format version.
func (s *Store) Save(e *Entry) error {
	c := *e
	c.Version, c.Server, c.Key = formatVersion, s.name, s.key
	b, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("catalog cache %s: %w", s.path, err)
	}
	if err := privatefile.Write(s.path, b); err != nil {
		return fmt.Errorf("catalog cache %s: %w", s.path, err)
	}
	s.removeStale()
	return nil
}

// removeStale removes the entries of earlier identities of the same name
// (a changed command): they can never be read again.
func (s *Store) removeStale() {
	matches, _ := filepath.Glob(filepath.Join(s.dir, s.name+".*.json"))
	for _, m := range matches {
		base := filepath.Base(m)
		mid := strings.TrimSuffix(strings.TrimPrefix(base, s.name+"."), ".json")
		if m != s.path && len(mid) == 16 && !strings.Contains(mid, ".") {
			os.Remove(m)
		}
	}
}
