package catalogcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/internal/privatefile"
	"github.com/mcpkeep/mcpkeep/transport"
)

// ErrUnusable: a cache file exists but cannot be used (corrupt, of another
// format version, or of another server). It is a warning, never a failure.
var ErrUnusable = errors.New("catalog cache file unusable")

// Cache is a directory of entries, one file per server identity and what
// its client declared (see For).
type Cache struct {
	dir string
	// Environ is mcpkeep's environment as the servers inherit it
	// (nil: os.Environ); tests set it.
	Environ func() []string
	salt    *salt
}

// New returns the cache in dir; the directory is created (0700) at the
// first write, or at the first For, which makes its salt.
func New(dir string) *Cache { return &Cache{dir: dir, salt: &salt{dir: dir}} }

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

// Declared is what mcpkeep tells a server of its client (for a proxy: of
// the host behind it). A server may list other tools to a client that
// declares other capabilities (server-everything lists its sampling,
// elicitation and roots tools only to a client that declares them), so a
// catalog is cached per Declared and never served to a client that
// declares otherwise.
type Declared struct {
	Sampling      bool   `json:"sampling,omitempty"`
	SamplingTools bool   `json:"samplingTools,omitempty"`
	Elicitation   bool   `json:"elicitation,omitempty"`
	Roots         bool   `json:"roots,omitempty"`
	Protocol      string `json:"protocol,omitempty"` // the version asked for ("" the SDK's)
}

// For returns the store of server sc as a client declaring d sees it. Its
// file is named by the server and a keyed hash of everything its catalog
// depends on (see identity), so same-named servers of two configs keep
// two entries. When the directory's salt cannot be read or made, the
// store reports that error at each Load and Save.
func (c *Cache) For(sc config.Server, d Declared) *Store {
	s := &Store{dir: c.dir, name: sc.Name, declared: d}
	key, err := c.salt.get()
	if err != nil {
		s.err = err
		s.path = filepath.Join(c.dir, sc.Name+".unusable.json")
		return s
	}
	environ := os.Environ
	if c.Environ != nil {
		environ = c.Environ
	}
	id := identityOf(sc, environ())
	id.Declared = d
	s.key = mac(key, mustJSON(id))
	s.path = filepath.Join(c.dir, sc.Name+"."+s.key[:tagLen]+fileSuffix)
	return s
}

// A file is <server>.<tag>.v2.json, tag the first tagLen hex digits of
// the entry's key.
const (
	tagLen     = 16
	fileSuffix = ".v2.json"
)

// StaleAfter is how long an entry nobody wrote is kept: another identity
// of a server (an edited command, a rotated secret, another config's
// server of the same name) is removed by the next save of the server once
// it is this old.
const StaleAfter = 30 * 24 * time.Hour

// identity is everything a server's catalog depends on: what makes the
// server that server, the environment its process gets (values expanded,
// all of mcpkeep's with inheritEnv) and what its client declares. Secrets (env and header values) are in it only to
// be hashed with the directory's salt.
type identity struct {
	Transport string            `json:"t"`
	Command   string            `json:"c,omitempty"`
	Args      []string          `json:"a,omitempty"`
	Dir       string            `json:"d,omitempty"`
	Env       []string          `json:"e,omitempty"` // the child's environment
	URL       string            `json:"u,omitempty"`
	Headers   map[string]string `json:"h,omitempty"` // expanded
	OAuth     *config.OAuth     `json:"o,omitempty"`
	Declared  Declared          `json:"k"`
}

func identityOf(sc config.Server, environ []string) identity {
	id := identity{Transport: sc.Transport, Command: sc.Command, Args: sc.Args, Dir: sc.Dir, URL: sc.URL, OAuth: sc.OAuth}
	lookup := transport.LookupIn(environ)
	if sc.Transport == config.TransportStdio {
		id.Env = transport.ChildEnv(environ, sc.InheritEnv, sc.Env)
	}
	id.Headers = transport.ExpandEnv(sc.Headers, lookup)
	return id
}

// mustJSON marshals what cannot fail to marshal (strings, string maps and
// slices, bools, and config.OAuth's strings).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("catalogcache: %v", err))
	}
	return b
}

// Store is one server's entry in a cache.
type Store struct {
	dir, name, key, path string
	declared             Declared
	err                  error // the salt's: the store is unusable
}

// Path is the entry's file.
func (s *Store) Path() string { return s.path }

// Load returns the entry, or (nil, nil) when there is none or it says
// its client declared otherwise (a supervisor's roots came later). An
// unusable file is an error matching ErrUnusable.
func (s *Store) Load() (*Entry, error) {
	if s.err != nil {
		return nil, fmt.Errorf("catalog cache %s: %w: %w", s.dir, ErrUnusable, s.err)
	}
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
	case e.Declared == nil || *e.Declared != s.declared:
		return nil, nil
	}
	return &e, nil
}

// Save writes e atomically with mode 0600, stamped with the store's
// server name, key and format version, and with what the client declared
// unless e says it (a supervisor says what its generation declared).
func (s *Store) Save(e *Entry) error {
	if s.err != nil {
		return fmt.Errorf("catalog cache %s: %w", s.dir, s.err)
	}
	c := *e
	c.Version, c.Server, c.Key = formatVersion, s.name, s.key
	if c.Declared == nil {
		d := s.declared
		c.Declared = &d
	}
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

// removeStale removes the server's entries of format 1 (<server>.<16
// hex>.json, named by a plain hash of its secrets: no version reads them)
// and its other entries nobody wrote for StaleAfter.
func (s *Store) removeStale() {
	matches, _ := filepath.Glob(filepath.Join(s.dir, s.name+".*.json"))
	for _, m := range matches {
		mid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), s.name+"."), ".json")
		legacy := len(mid) == tagLen && !strings.Contains(mid, ".")
		other := m != s.path && len(mid) == tagLen+len(fileSuffix)-len(".json") && strings.HasSuffix(m, fileSuffix)
		if legacy {
			os.Remove(m)
			continue
		}
		if fi, err := os.Stat(m); other && err == nil && time.Since(fi.ModTime()) > StaleAfter {
			os.Remove(m)
		}
	}
}
