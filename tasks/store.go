package tasks

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Store keeps finished tasks until they expire (docs/design.md §25). A
// record is keyed by its ID and serializes to bytes (Encode), so a
// key-value store with TTLs can back it: Put with a TTL of
// ExpiresAt-now, Get, Delete. The engine keeps working tasks itself and
// puts each one here when it ends; it never trusts a Get past the
// record's ExpiresAt.
type Store interface {
	// Put keeps r (a finished task) until r.ExpiresAt, replacing any
	// record of that ID.
	Put(ctx context.Context, r Record) error
	// Get returns the record of id, or an error matching ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Delete forgets id; deleting a missing id is not an error.
	Delete(ctx context.Context, id string) error
}

// Sweeper is a Store that forgets expired records only when asked (a
// key-value store with TTLs needs no sweep). The engine sweeps on
// startup and then at most once per Options.SweepEvery.
type Sweeper interface {
	Sweep(ctx context.Context, now time.Time) (removed int, err error)
}

// ErrNotFound: no task of that id (never created, forgotten after its
// TTL, or another host's). The front answers -32602.
var ErrNotFound = errors.New("no such task")

// MemStore is the default Store: finished tasks in this process's memory.
type MemStore struct {
	mu   sync.Mutex
	recs map[string]Record
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{recs: map[string]Record{}} }

func (m *MemStore) Put(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[r.ID] = r
	return nil
}

func (m *MemStore) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return r, nil
}

func (m *MemStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}

// Sweep forgets every record expired at now.
func (m *MemStore) Sweep(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, r := range m.recs {
		if !now.Before(r.ExpiresAt) {
			delete(m.recs, id)
			n++
		}
	}
	return n, nil
}

// Len is the number of records kept (expired ones not yet swept included).
func (m *MemStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}
