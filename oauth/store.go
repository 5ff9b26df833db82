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

// Save writes e atomically with mode 0600, creating the directory (0700).
func (s *Store) Save(e *Entry) error {
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
	err := os.Remove(s.path(url, clientID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return nil
}

// deleteIf forgets the entry only while it still holds the token that
// was refused: a sign-in that stored a new one meanwhile wins.
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
	return s.Delete(url, clientID)
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
