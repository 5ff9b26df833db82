package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/privatefile"
	"golang.org/x/oauth2"
)

// EnvTokenDir, when set, is the token store's directory instead of
// DefaultDir's: for tests and for machines whose config directory is not
// the place for secrets.
const EnvTokenDir = "MCPKEEP_TOKEN_DIR"

// DefaultDir is the token store's directory: $MCPKEEP_TOKEN_DIR, else
// os.UserConfigDir()/mcpkeep/tokens.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvTokenDir); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("oauth: token store: %w (set %s)", err, EnvTokenDir)
	}
	return filepath.Join(base, "mcpkeep", "tokens"), nil
}

// Store keeps one Entry per server URL and configured client, each in a
// file of its own (0600, in a 0700 directory), replaced atomically (a
// temporary file renamed over it), so a reader never sees half an entry
// and a proxy can watch the directory (Watch).
type Store struct {
	Dir string
}

// DefaultStore is the Store at DefaultDir.
func DefaultStore() (*Store, error) {
	d, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return &Store{Dir: d}, nil
}

// Entry is what a sign-in leaves: the token and what refreshing it needs.
// ClientSecret and the token's fields are secrets: Entry has no String
// method that shows them, and nothing in this package prints them.
type Entry struct {
	// URL and ConfigClientID are the key: the server's MCP endpoint, and
	// the client id configured for it ("" for dynamic registration).
	URL            string `json:"url"`
	ConfigClientID string `json:"configClientId,omitempty"`
	// Server is the name the server had at sign-in (for status only).
	Server string `json:"server,omitempty"`
	// ClientID is the client the token was issued to (the registered one
	// under dynamic registration); ClientSecret the secret registration
	// issued, if any (a configured secret stays in its variable).
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// TokenURL and AuthStyle are how to refresh.
	TokenURL  string           `json:"tokenUrl"`
	AuthStyle oauth2.AuthStyle `json:"authStyle,omitempty"`
	Scopes    []string         `json:"scopes,omitempty"`
	// StepUpScopes are the scopes a server asked for beyond those granted
	// (a 403 insufficient_scope, docs/design.md §22): the next login asks
	// for them too.
	StepUpScopes []string `json:"stepUpScopes,omitempty"`
	// SignedIn is when a person signed in (a refresh keeps it): Watch
	// reports a change of it, not every refresh.
	SignedIn time.Time `json:"signedIn"`

	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

func (e *Entry) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: e.AccessToken, TokenType: e.TokenType,
		RefreshToken: e.RefreshToken, Expiry: e.Expiry}
}

func (e *Entry) setToken(t *oauth2.Token) {
	e.AccessToken, e.TokenType, e.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" {
		e.RefreshToken = t.RefreshToken
	}
}

// ErrNotSignedIn: the store holds no entry for that server and client.
var ErrNotSignedIn = errors.New("not signed in")

// path is the entry's file: a hash of its key, so any URL makes a safe
// file name and two clients of one server do not share a token.
func (s *Store) path(url, clientID string) string {
	sum := sha256.Sum256([]byte(url + "\n" + clientID))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:12])+".json")
}

// Load returns the entry of url and clientID, or ErrNotSignedIn.
func (s *Store) Load(url, clientID string) (*Entry, error) {
	e, _, err := s.load(s.path(url, clientID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotSignedIn
	}
	return e, err
}

func (s *Store) load(path string) (*Entry, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	var e Entry
	if err := json.NewDecoder(f).Decode(&e); err != nil {
		// json's syntax errors quote no input, but name the file only.
		return nil, time.Time{}, fmt.Errorf("oauth: token store %s: unreadable entry", path)
	}
	return &e, st.ModTime(), nil
}

// Save writes e atomically with mode 0600, creating the directory (0700),
// under the entry's lock: a sign-in replaces whatever was there.
func (s *Store) Save(e *Entry) error {
	return s.withLock(e.URL, e.ConfigClientID, func() error { return s.write(e) })
}

// write writes e; the caller holds the entry's lock.
func (s *Store) write(e *Entry) error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := privatefile.Write(s.path(e.URL, e.ConfigClientID), data); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return nil
}

// Delete forgets the entry of url and clientID; forgetting what is not
// there is not an error.
func (s *Store) Delete(url, clientID string) error {
	return s.withLock(url, clientID, func() error { return s.remove(url, clientID) })
}

func (s *Store) remove(url, clientID string) error {
	err := os.Remove(s.path(url, clientID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return nil
}

// ErrStoreLocked: another process held an entry's lock for longer than a
// refresh can take.
var ErrStoreLocked = errors.New("token store entry locked by another process")

// ErrEntryChanged: a compare-and-swap found the entry changed since it was
// read (another process refreshed it, or a person signed in again).
var ErrEntryChanged = errors.New("token store entry changed meanwhile")

// lockWait bounds the wait for an entry's lock: longer than one refresh
// (tokenTimeout) takes its holder.
const lockWait = tokenTimeout + 15*time.Second

// withLock runs fn holding the entry's lock: an advisory file lock on a
// file beside the entry (docs/design.md §22), so several processes that
// share the store (two proxies, `auth login` beside a running proxy) read,
// refresh and write an entry one at a time.
func (s *Store) withLock(url, clientID string, fn func() error) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	unlock, err := lockFile(strings.TrimSuffix(s.path(url, clientID), ".json")+".lock", lockWait)
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	defer unlock()
	return fn()
}

// swap replaces the entry of next's key with next only while the store
// still holds old (nil: no entry), else ErrEntryChanged; the caller holds
// the entry's lock. Whoever wrote meanwhile wrote something newer.
func (s *Store) swap(old, next *Entry) error {
	cur, err := s.Load(next.URL, next.ConfigClientID)
	if err != nil && !errors.Is(err, ErrNotSignedIn) {
		return err
	}
	if !sameEntry(cur, old) {
		return ErrEntryChanged
	}
	return s.write(next)
}

// sameEntry: a and b hold the same sign-in and the same tokens.
func sameEntry(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken && a.SignedIn.Equal(b.SignedIn)
}

// deleteIf forgets the entry only while it still holds the token that
// was refused: a sign-in that stored a new one meanwhile wins. The caller
// holds the entry's lock, so nothing is written between the look and the
// removal.
func (s *Store) deleteIf(url, clientID, refused string) error {
	e, err := s.Load(url, clientID)
	if err != nil {
		if errors.Is(err, ErrNotSignedIn) {
			return nil
		}
		return err
	}
	if e.AccessToken != refused && e.RefreshToken != refused {
		return nil
	}
	return s.remove(url, clientID)
}

// List returns every entry, sorted by URL then client.
func (s *Store) List() ([]*Entry, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	var out []*Entry
	for _, d := range ents {
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".json") {
			continue
		}
		e, _, err := s.load(filepath.Join(s.Dir, d.Name()))
		if err != nil {
			continue // being replaced, or not ours
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *Entry) int {
		if c := strings.Compare(a.URL, b.URL); c != 0 {
			return c
		}
		return strings.Compare(a.ConfigClientID, b.ConfigClientID)
	})
	return out, nil
}
