package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/store"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// TestKVStore: a finished task kept in a key-value store with TTLs (the
// embedded store.Memory here; Redis behind the same interface) comes
// back whole, expires with the task, and what the store hands back that
// is not the task's record is refused, never trusted.
func TestKVStore(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	kv := store.NewMemory(clk, 0)
	st := &tasks.KVStore{KV: kv, NotFound: store.ErrNotFound, Now: clk.Now}
	rec := tasks.Record{ID: "r1~tag~abc", Status: tasks.Completed, CreatedAt: clk.Now(), UpdatedAt: clk.Now(),
		TTLMs: 60_000, ExpiresAt: clk.Now().Add(time.Minute), Result: json.RawMessage(`{"content":[]}`)}
	if err := st.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, rec.ID)
	if err != nil || got.ID != rec.ID || got.Status != tasks.Completed || string(got.Result) != string(rec.Result) {
		t.Fatalf("Get = %+v, %v; want the record put", got, err)
	}
	if _, err := st.Get(ctx, "other"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get(other) = %v, want ErrNotFound", err)
	}

	// Another record stored under this id's key (a store someone else
	// writes): refused.
	data, _ := tasks.Encode(tasks.Record{ID: "forged", ExpiresAt: clk.Now().Add(time.Minute)})
	if err := kv.Put(ctx, "mcpkeep:task:r1~tag~xyz", data, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "r1~tag~xyz"); !errors.Is(err, tasks.ErrBadRecord) {
		t.Errorf("Get of a record stored under another id = %v, want ErrBadRecord", err)
	}
	if err := kv.Put(ctx, "mcpkeep:task:junk", []byte("{not json"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "junk"); !errors.Is(err, tasks.ErrBadRecord) {
		t.Errorf("Get of junk = %v, want ErrBadRecord", err)
	}

	// The task's TTL is the key's: gone after it.
	clk.Add(time.Minute + time.Second)
	if _, err := st.Get(ctx, rec.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get after the TTL = %v, want ErrNotFound", err)
	}
	// A record already expired is not kept.
	old := rec
	old.ExpiresAt = clk.Now().Add(-time.Second)
	if err := st.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, rec.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get of an expired put = %v, want ErrNotFound", err)
	}
}
