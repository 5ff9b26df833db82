package catalogcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func server() config.Server {
	return config.Server{Name: "files", Transport: config.TransportStdio, Command: "files-server",
		Args: []string{"--root", "/x"}, Env: map[string]string{"TOKEN": "s3cret-value"}}
}

func TestRoundTrip(t *testing.T) {
	c := New(t.TempDir())
	st := c.For(server())
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
	fi, err := os.Stat(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
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

// A secret's value is part of the identity: another token is another
// server as far as the cache knows.
func TestKeyHashesSecrets(t *testing.T) {
	a, b := server(), server()
	b.Env = map[string]string{"TOKEN": "other"}
	if Key(a) == Key(b) {
		t.Fatal("env values do not change the key")
	}
	c := server()
	c.Env = map[string]string{"TOKEN": "s3cret-value"}
	if Key(a) != Key(c) {
		t.Fatal("equal servers hash differently")
	}
	h := config.Server{Name: "web", Transport: config.TransportHTTP, URL: "https://x", Headers: map[string]string{"A": "1"}}
	h2 := h
	h2.Headers = map[string]string{"A": "2"}
	if Key(h) == Key(h2) {
		t.Fatal("header values do not change the key")
	}
}

func TestUnusableIsAWarning(t *testing.T) {
	c := New(t.TempDir())
	st := c.For(server())
	if err := os.WriteFile(st.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Load(); e != nil || !errors.Is(err, ErrUnusable) {
		t.Fatalf("corrupt: %v, %v", e, err)
	}
	// A file renamed from another server's entry is foreign.
	other := server()
	other.Name = "other"
	if err := c.For(other).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.For(other).Path())
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

func TestChangedIdentityDropsTheOldEntry(t *testing.T) {
	c := New(t.TempDir())
	a := server()
	if err := c.For(a).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Command = "files-server-2"
	if e, err := c.For(b).Load(); e != nil || err != nil {
		t.Fatalf("a changed command read the old catalog: %v, %v", e, err)
	}
	if err := c.For(b).Save(&Entry{Listed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.For(a).Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale entry kept: %v", err)
	}
}
