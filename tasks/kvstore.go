package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// KV is a key-value store with TTLs, as store.KV is (docs/design.md
// §26): KVStore keeps finished tasks in it, so with a shared store any
// replica answers a poll and a result outlives the replica that ran it.
type KV interface {
	Put(ctx context.Context, key string, val []byte, ttl time.Duration) error
	Get(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
}

// KVStore is a Store over a KV: each finished task one value under
// Prefix+ID, expiring with the task (the KV forgets it; no sweep).
// What comes back is as hostile as any input (another process, a store
// someone else writes): it is decoded within the bound and must be the
// record asked for.
type KVStore struct {
	KV KV
	// Prefix starts every key ("mcpkeep:task:" when empty).
	Prefix string
	// NotFound is the KV's error for a missing key (errors.Is).
	NotFound error
	// MaxBytes bounds a record read back (0: DefaultMaxResultBytes
	// plus room for the record's own fields).
	MaxBytes int
	// Now is the clock TTLs are counted from (nil: time.Now).
	Now func() time.Time
}

// kvPrefix is KVStore's default key prefix.
const kvPrefix = "mcpkeep:task:"

func (s *KVStore) key(id string) string {
	if s.Prefix == "" {
		return kvPrefix + id
	}
	return s.Prefix + id
}

func (s *KVStore) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Put keeps r until r.ExpiresAt (a record already expired is deleted).
func (s *KVStore) Put(ctx context.Context, r Record) error {
	ttl := r.ExpiresAt.Sub(s.now())
	if ttl <= 0 {
		return s.Delete(ctx, r.ID)
	}
	data, err := Encode(r)
	if err != nil {
		return err
	}
	return s.KV.Put(ctx, s.key(r.ID), data, ttl)
}

// Get returns id's record: ErrNotFound when the KV has none, ErrBadRecord
// when what it has is not that task's record.
func (s *KVStore) Get(ctx context.Context, id string) (Record, error) {
	data, err := s.KV.Get(ctx, s.key(id))
	if err != nil {
		if s.NotFound != nil && errors.Is(err, s.NotFound) {
			return Record{}, ErrNotFound
		}
		return Record{}, err
	}
	max := s.MaxBytes
	if max <= 0 {
		max = DefaultMaxResultBytes + 64<<10
	}
	r, err := Decode(data, max)
	if err != nil {
		return Record{}, err
	}
	if r.ID != id {
		return Record{}, fmt.Errorf("%w: stored under %q but names %q", ErrBadRecord, id, r.ID)
	}
	return r, nil
}

// Delete forgets id.
func (s *KVStore) Delete(ctx context.Context, id string) error {
	return s.KV.Delete(ctx, s.key(id))
}
