package mcpkeep

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/tools"
)

// hintSink is a tools.Set that reports each server's first registration.
type hintSink struct {
	*tools.Set
	hinted map[string]chan struct{}
}

func (s hintSink) Replace(server string, gen uint64, defs []tools.Tool) error {
	err := s.Set.Replace(server, gen, defs)
	if c, ok := s.hinted[server]; ok && err == nil {
		select {
		case <-c:
		default:
			close(c)
		}
	}
	return err
}

// TestPoolReadsCachedCatalogsInParallel: Apply registers the cached
// catalogs of several servers at once (docs/design.md §20): one whose
// cache entry is slow to read (a FIFO nobody writes yet) does not hold
// back the next one's. Before, they were read one after the other.
func TestPoolReadsCachedCatalogsInParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), poolDeadline)
	defer cancel()
	dir := t.TempDir()
	cache := catalogcache.New(dir)
	a, b := memServer("a"), memServer("b")
	for _, sc := range []config.Server{a, b} {
		if err := cache.For(sc, catalogcache.Declared{}).Save(memEntry("echo")); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "a.*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("a's cache entry: %v %v", files, err)
	}
	entry, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(files[0], 0o600); err != nil {
		t.Fatal(err)
	}
	// a's entry comes once b's catalog is registered (or, when that never
	// happens, at the test's end, so that nothing stays blocked).
	sink := hintSink{Set: tools.NewSet(tools.Limits{}), hinted: map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}}
	written := make(chan struct{})
	release := make(chan struct{})
	go func() {
		defer close(written)
		select {
		case <-sink.hinted["b"]:
		case <-release:
		}
		f, err := os.OpenFile(files[0], os.O_WRONLY, 0)
		if err != nil {
			return
		}
		_, _ = f.Write(entry)
		f.Close()
	}()
	defer func() { close(release); <-written }()
	o := newMemOpeners()
	p := newTestPool(t, o, PoolOptions{Cache: cache, Sink: sink})
	applied := make(chan error, 1)
	go func() { applied <- p.Apply(ctx, &config.Config{Servers: []config.Server{a, b}}) }()
	for _, name := range []string{"b", "a"} {
		select {
		case <-sink.hinted[name]:
		case <-ctx.Done():
			t.Fatalf("%s's cached catalog was never registered (a's entry is read first and blocks)", name)
		}
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
}
