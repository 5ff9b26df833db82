package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpkeep/mcpkeep/internal/privatefile"
	"github.com/mcpkeep/mcpkeep/tasks"
)

func record(id string, exp time.Time) tasks.Record {
	return tasks.Record{ID: id, Status: tasks.Completed, CreatedAt: exp.Add(-time.Minute), UpdatedAt: exp.Add(-time.Minute),
		TTLMs: 60000, ExpiresAt: exp, Owner: "h", Result: json.RawMessage(`{"content":[]}`)}
}

func TestDiskStoreRoundTripPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	d, err := tasks.OpenDiskStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	want := record("../../etc/passwd", exp) // an id is never a path
	if err := d.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, want.ID)
	if err != nil || got.ID != want.ID || got.Status != tasks.Completed || string(got.Result) != string(want.Result) || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("got %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d files", len(entries))
	}
	fi, _ := entries[0].Info()
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	if _, err := d.Get(ctx, "other"); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if err := d.Delete(ctx, want.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, want.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
}

// TestDiskStoreRefusesHostileFiles: a file in place of a record that is
// a link, too big, not JSON, or holds another id is refused with an error
// naming it (ErrBadRecord), and a sweep removes it.
func TestDiskStoreRefusesHostileFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	d, err := tasks.OpenDiskStore(dir, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	// Find the file name of each id by putting a record first.
	pathOf := func(id string) string {
		before, _ := os.ReadDir(dir)
		if err := d.Put(ctx, record(id, exp)); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadDir(dir)
		for _, a := range after {
			found := false
			for _, b := range before {
				found = found || a.Name() == b.Name()
			}
			if !found {
				return filepath.Join(dir, a.Name())
			}
		}
		t.Fatal("no new file")
		return ""
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"taskId":"link","expiresAt":"2030-01-01T00:00:00Z"}`), 0o600)
	other, _ := json.Marshal(record("someone-else", exp))
	for _, c := range []struct {
		id, want string
		plant    func(p string)
	}{
		{"link", "not a regular file", func(p string) { os.Remove(p); os.Symlink(secret, p) }},
		{"huge", "over the bound", func(p string) { os.WriteFile(p, []byte(strings.Repeat(" ", 4096)), 0o600) }},
		{"corrupt", "not a task record", func(p string) { os.WriteFile(p, []byte(`{"taskId": "corr`), 0o600) }},
		{"swapped", `holds task "someone-else"`, func(p string) { os.WriteFile(p, other, 0o600) }},
		{"empty", "no taskId", func(p string) { os.WriteFile(p, []byte(`{}`), 0o600) }},
	} {
		p := pathOf(c.id)
		c.plant(p)
		_, err := d.Get(ctx, c.id)
		if !errors.Is(err, tasks.ErrBadRecord) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want ErrBadRecord naming %s and %q", c.id, err, p, c.want)
		}
	}
	n, err := d.Sweep(ctx, exp.Add(-time.Second))
	if err != nil || n != 5 {
		t.Fatalf("sweep removed %d (%v), want the 5 bad files", n, err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("the sweep followed the link")
	}
}

func TestDiskStoreRefusesUnsafeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	if _, err := tasks.OpenDiskStore(dir, 0); !errors.Is(err, privatefile.ErrUnsafeDir) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("world-writable dir: %v", err)
	}
}

// TestDiskStoreSurvivesRestart: a finished task's result is found by a
// new engine over the same directory (a restart of mcpkeep), until its
// TTL; then the new engine's first sweep removes it.
func TestDiskStoreSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		clk.Set(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
		open := func() *tasks.Engine {
			d, err := tasks.OpenDiskStore(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			e, err := tasks.New(tasks.Options{Clock: clk, Store: d, DefaultTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		e1 := open()
		rec, err := e1.Create(tasks.Spec{Owner: "h", Run: func(context.Context, tasks.Hooks) (json.RawMessage, error) {
			return okResult, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e1.Close(context.Background()); err != nil {
			t.Fatal(err)
		}

		e2 := open()
		got, err := e2.Get(context.Background(), "h", rec.ID)
		if err != nil || got.Status != tasks.Completed || string(got.Result) != string(okResult) {
			t.Fatalf("after the restart: %+v, %v", got, err)
		}
		if _, err := e2.Get(context.Background(), "x", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("another host: %v", err)
		}
		e2.Close(context.Background())

		clk.Add(time.Minute)
		e3 := open()
		if _, err := e3.Get(context.Background(), "h", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("after the TTL: %v", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%d files left after the TTL", len(entries))
		}
		e3.Close(context.Background())
	})
}
