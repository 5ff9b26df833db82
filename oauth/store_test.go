package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStorePrivateAndAtomic: entries are 0600 in a 0700 directory, keyed
// by URL and client, replaced whole (no temporary file left behind).
func TestStorePrivateAndAtomic(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "mcpkeep", "tokens")}
	if _, err := s.Load("http://h/mcp", ""); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("Load of nothing = %v, want ErrNotSignedIn", err)
	}
	a := &Entry{URL: "http://h/mcp", ClientID: "c1", AccessToken: "a1", RefreshToken: "r1", SignedIn: time.Unix(1, 0).UTC()}
	b := &Entry{URL: "http://h/mcp", ConfigClientID: "mine", ClientID: "mine", AccessToken: "a2"}
	for _, e := range []*Entry{a, b} {
		if err := s.Save(e); err != nil {
			t.Fatal(err)
		}
	}
	a.AccessToken = "a1b"
	if err := s.Save(a); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("http://h/mcp", "")
	if err != nil || got.AccessToken != "a1b" || got.RefreshToken != "r1" {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if got, err := s.Load("http://h/mcp", "mine"); err != nil || got.AccessToken != "a2" {
		t.Fatalf("the second client's entry = %+v, %v", got, err)
	}
	fi, err := os.Stat(s.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, %v", fi.Mode().Perm(), err)
	}
	all, _ := os.ReadDir(s.Dir)
	var files []os.DirEntry
	for _, f := range all {
		wantPrivate(t, filepath.Join(s.Dir, f.Name()))
		if !strings.HasSuffix(f.Name(), ".lock") { // the entries' locks (lock_unix.go) hold nothing
			files = append(files, f)
		}
	}
	if len(files) != 2 {
		t.Fatalf("%d files in the store, want 2 (no temporary left)", len(files))
	}
	if l, err := s.List(); err != nil || len(l) != 2 {
		t.Fatalf("List = %d entries, %v", len(l), err)
	}
	if err := Logout(s, Target{URL: "http://h/mcp"}); err != nil {
		t.Fatal(err)
	}
	if err := Logout(s, Target{URL: "http://h/mcp"}); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("second Logout = %v, want ErrNotSignedIn", err)
	}
}
