package catalogcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func server() config.Server {
	return config.Server{Name: "files", Transport: config.TransportStdio, Command: "files-server",
		Args: []string{"--root", "/x"}, Env: map[string]string{"TOKEN": "s3cret-value"}}
}

// newCache is a cache in a fresh directory whose servers inherit environ.
func newCache(t *testing.T, environ ...string) *Cache {
	c := New(t.TempDir())
	c.Environ = func() []string { return environ }
	return c
}

var none Declared

func TestRoundTrip(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	st := c.For(server(), none)
	if e, err := st.Load(); e != nil || err != nil {
		t.Fatalf("empty cache: %v, %v", e, err)
	}
	in := &Entry{Listed: true, Init: &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "files", Version: "1"}, Instructions: "hi"},
		Tools:   []*mcp.Tool{{Name: "read", InputSchema: map[string]any{"type": "object"}}},
		Prompts: []*mcp.Prompt{{Name: "p"}}, Resources: []*mcp.Resource{{URI: "file:///a", Name: "a"}},
		Templates: []*mcp.ResourceTemplate{{URITemplate: "file:///{x}", Name: "t"}}}
	if err := st.Save(in); err != nil {
		t.Fatal(err)
	}
	out, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !out.Listed || out.Server != "files" || len(out.Tools) != 1 || out.Tools[0].Name != "read" ||
		out.Init.Instructions != "hi" || len(out.Prompts) != 1 || len(out.Resources) != 1 || len(out.Templates) != 1 {
		t.Fatalf("round trip: %+v", out)
	}
	for _, p := range []string{st.Path(), filepath.Join(c.Dir(), saltFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	b, _ := os.ReadFile(st.Path())
	if strings.Contains(string(b), "s3cret-value") || strings.Contains(string(b), "TOKEN") {
		t.Fatalf("the file holds the env: %s", b)
	}
	left, _ := filepath.Glob(filepath.Join(c.Dir(), ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// sameEntry reports whether a store of sc in c reads what a store of
// saved wrote (after that Save).
func sameEntry(t *testing.T, c *Cache, saved, sc config.Server) bool {
	t.Helper()
	if err := c.For(saved, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	e, err := c.For(sc, none).Load()
	if err != nil {
		t.Fatal(err)
	}
	return e != nil
}

// The key hashes what the child gets: env values expanded from mcpkeep's
// environment (a changed secret behind ${VAR} is another server), header
// values expanded, and with inheritEnv the whole environment.
func TestKeyHashesWhatTheServerGets(t *testing.T) {
	tmpl := server()
	tmpl.Env = map[string]string{"TOKEN": "${SECRET}"}
	a := newCache(t, "PATH=/bin", "SECRET=one", "OTHER=x")
	b := New(a.Dir())
	b.Environ = func() []string { return []string{"PATH=/bin", "SECRET=two", "OTHER=x"} }
	if err := a.For(tmpl, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := b.For(tmpl, none).Load(); e != nil || err != nil {
		t.Fatalf("a changed secret behind ${SECRET} read the old catalog: %+v, %v", e, err)
	}

	// Without inheritEnv a variable the child does not get changes nothing;
	// with it, it is part of the child's environment.
	other := New(a.Dir())
	other.Environ = func() []string { return []string{"PATH=/bin", "SECRET=one", "OTHER=y"} }
	if e, err := other.For(tmpl, none).Load(); e == nil || err != nil {
		t.Fatalf("a variable the child does not inherit changed the key: %v, %v", e, err)
	}
	inherit := tmpl
	inherit.InheritEnv = true
	if err := a.For(inherit, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := other.For(inherit, none).Load(); e != nil || err != nil {
		t.Fatalf("inheritEnv: a changed environment read the old catalog: %+v, %v", e, err)
	}
	// A base variable (PATH) is inherited always.
	path := New(a.Dir())
	path.Environ = func() []string { return []string{"PATH=/usr/bin", "SECRET=one", "OTHER=x"} }
	if e, err := path.For(tmpl, none).Load(); e != nil || err != nil {
		t.Fatalf("a changed PATH read the old catalog: %+v, %v", e, err)
	}

	h := config.Server{Name: "web", Transport: config.TransportHTTP, URL: "https://x", Headers: map[string]string{"A": "Bearer ${SECRET}"}}
	if err := a.For(h, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := b.For(h, none).Load(); e != nil || err != nil {
		t.Fatalf("a changed header secret read the old catalog: %+v, %v", e, err)
	}

	c := newCache(t, "PATH=/bin")
	lit := server()
	lit2 := server()
	lit2.Env = map[string]string{"TOKEN": "other"}
	if sameEntry(t, c, lit, lit2) {
		t.Fatal("env values do not change the key")
	}
	if !sameEntry(t, c, lit, server()) {
		t.Fatal("equal servers hash differently")
	}
}

// A file's name and its content say nothing of a secret: the hashes are
// keyed with the directory's random salt, so the same server in two
// directories has two names, neither of them a plain hash.
func TestNamesAreSalted(t *testing.T) {
	sc := server()
	c1, c2 := newCache(t, "PATH=/bin"), newCache(t, "PATH=/bin")
	p1, p2 := filepath.Base(c1.For(sc, none).Path()), filepath.Base(c2.For(sc, none).Path())
	if p1 == p2 {
		t.Fatalf("two directories name the server alike: %s", p1)
	}
	plain, _ := json.Marshal(identityOf(sc, []string{"PATH=/bin"}))
	sum := sha256.Sum256(plain)
	if strings.Contains(p1, hex.EncodeToString(sum[:])[:tagLen]) {
		t.Fatalf("the name %s is a plain hash", p1)
	}
	// One directory, one salt: a second Cache on it agrees.
	again := New(c1.Dir())
	again.Environ = c1.Environ
	if p := filepath.Base(again.For(sc, none).Path()); p != p1 {
		t.Fatalf("a second cache on the directory names the server %s, want %s", p, p1)
	}
}

// Processes starting together on a fresh directory agree on its salt.
func TestSaltMadeOnce(t *testing.T) {
	dir := t.TempDir()
	paths := make([]string, 8)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i] = New(dir).For(server(), none).Path() })
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("caches made at once disagree: %v", paths)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A broken salt makes the cache unusable (a warning), never a server's
// entry under another key.
func TestBrokenSaltIsUnusable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, saltFile), []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := New(dir).For(server(), none)
	if e, err := st.Load(); e != nil || !errors.Is(err, ErrUnusable) {
		t.Fatalf("load: %v, %v", e, err)
	}
	if err := st.Save(&Entry{Listed: true}); err == nil {
		t.Fatal("save with a broken salt succeeded")
	}
}

// What the client declares is part of the entry's name: a catalog listed
// for a host without sampling, elicitation and roots is not served to one
// with them, and neither evicts the other.
func TestDeclaredCapabilitiesAreKeyed(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	all := Declared{Sampling: true, Elicitation: true, Roots: true}
	if err := c.For(server(), none).Save(&Entry{Listed: true, Tools: []*mcp.Tool{{Name: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.For(server(), all).Load(); e != nil || err != nil {
		t.Fatalf("a host declaring %+v read the catalog listed for one declaring nothing: %+v, %v", all, e, err)
	}
	if err := c.For(server(), all).Save(&Entry{Listed: true, Tools: []*mcp.Tool{{Name: "echo"}, {Name: "sample"}}}); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[Declared]int{none: 1, all: 2} {
		e, err := c.For(server(), d).Load()
		if err != nil || e == nil || len(e.Tools) != want || *e.Declared != d {
			t.Fatalf("declared %+v: %+v, %v", d, e, err)
		}
	}
	// An entry a supervisor stamped with another declaration is not served.
	other := Declared{Sampling: true}
	if err := c.For(server(), none).Save(&Entry{Listed: true, Declared: &other}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.For(server(), none).Load(); e != nil || err != nil {
		t.Fatalf("an entry declared %+v served to a client declaring nothing: %+v, %v", other, e, err)
	}
}

func TestUnusableIsAWarning(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	st := c.For(server(), none)
	if err := os.WriteFile(st.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Load(); e != nil || !errors.Is(err, ErrUnusable) {
		t.Fatalf("corrupt: %v, %v", e, err)
	}
	// A file renamed from another server's entry is foreign.
	other := server()
	other.Name = "other"
	if err := c.For(other, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.For(other, none).Path())
	if err := os.WriteFile(st.Path(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Load(); e != nil || !errors.Is(err, ErrUnusable) {
		t.Fatalf("foreign: %v, %v", e, err)
	}
	// A good save replaces the bad file.
	if err := st.Save(&Entry{NotComing: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Load(); err != nil || !e.NotComing {
		t.Fatalf("after save: %v, %v", e, err)
	}
}

// A changed command never reads the old catalog. The old entry stays
// (another config may still run that server) until nobody wrote it for
// StaleAfter; then the server's next save removes it.
func TestChangedIdentityDropsTheOldEntryOnceStale(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	a := server()
	if err := c.For(a, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Command = "files-server-2"
	if e, err := c.For(b, none).Load(); e != nil || err != nil {
		t.Fatalf("a changed command read the old catalog: %v, %v", e, err)
	}
	if err := c.For(b, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.For(a, none).Load(); e == nil || err != nil {
		t.Fatalf("the old identity's entry went at once: %v, %v", e, err)
	}
	old := time.Now().Add(-StaleAfter - time.Hour)
	if err := os.Chtimes(c.For(a, none).Path(), old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.For(b, none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.For(a, none).Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale entry kept: %v", err)
	}
	if e, err := c.For(b, none).Load(); e == nil || err != nil {
		t.Fatalf("the current entry: %v, %v", e, err)
	}
}

// Same-named servers of two configs keep two entries: a run of one does
// not evict the other's catalog (issue 33 item 18).
func TestSameNamedServersKeepTheirOwnEntries(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	a := server()
	b := server()
	b.Command = "other-files-server"
	for i := range 2 { // each run saves after its listing
		if err := c.For(a, none).Save(&Entry{Listed: true, Tools: []*mcp.Tool{{Name: "a"}}}); err != nil {
			t.Fatal(i, err)
		}
		if err := c.For(b, none).Save(&Entry{Listed: true, Tools: []*mcp.Tool{{Name: "b"}}}); err != nil {
			t.Fatal(i, err)
		}
	}
	for sc, tool := range map[string]config.Server{"a": a, "b": b} {
		e, err := c.For(tool, none).Load()
		if err != nil || e == nil || len(e.Tools) != 1 || e.Tools[0].Name != sc {
			t.Fatalf("server of command %s: %+v, %v (evicted by the other)", tool.Command, e, err)
		}
	}
}

// An entry of format 1 (named by a plain hash) is removed at the server's
// next save; another server's is left alone.
func TestLegacyEntriesRemoved(t *testing.T) {
	c := newCache(t, "PATH=/bin")
	old := filepath.Join(c.Dir(), "files.0123456789abcdef.json")
	keep := filepath.Join(c.Dir(), "other.0123456789abcdef.json")
	for _, p := range []string{old, keep} {
		if err := os.WriteFile(p, []byte(`{"version":1}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.For(server(), none).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("legacy entry kept: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("another server's file removed: %v", err)
	}
}
