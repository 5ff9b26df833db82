package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Memory is the embedded store: one process's membership and values in
// memory, expired by its clock. It is today's single process: nothing
// is shared (docs/design.md §26).
type Memory struct {
	clk      clock.Clock
	maxValue int

	mu      sync.Mutex
	members map[string]entry
	values  map[string]entry
	puts    int // since the last sweep
}

type entry struct {
	val     []byte
	expires time.Time
}

// NewMemory returns an empty Memory on clk (nil: the wall clock) that
// keeps values up to maxValue bytes (0: DefaultMaxValue).
func NewMemory(clk clock.Clock, maxValue int) *Memory {
	if clk == nil {
		clk = clock.New()
	}
	if maxValue <= 0 {
		maxValue = DefaultMaxValue
	}
	return &Memory{clk: clk, maxValue: maxValue, members: map[string]entry{}, values: map[string]entry{}}
}

// Register implements Membership.
func (m *Memory) Register(_ context.Context, id, addr string, ttl time.Duration) error {
	if err := checkMember(id, addr); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members[id] = entry{val: []byte(addr), expires: m.clk.Now().Add(ttl)}
	return nil
}

// Members implements Membership.
func (m *Memory) Members(context.Context) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	out := map[string]string{}
	for id, e := range m.members {
		if !now.Before(e.expires) {
			delete(m.members, id)
			continue
		}
		out[id] = string(e.val)
	}
	return out, nil
}

// Leave implements Membership.
func (m *Memory) Leave(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.members, id)
	return nil
}

// Put implements KV.
func (m *Memory) Put(_ context.Context, key string, val []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if len(val) > m.maxValue {
		return fmt.Errorf("%w: %d bytes, bound %d", ErrTooLarge, len(val), m.maxValue)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.puts++; m.puts >= sweepEvery {
		m.puts = 0
		m.sweepLocked()
	}
	m.values[key] = entry{val: append([]byte(nil), val...), expires: m.clk.Now().Add(ttl)}
	return nil
}

// Get implements KV.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.values[key]
	if !ok || !m.clk.Now().Before(e.expires) {
		delete(m.values, key)
		return nil, ErrNotFound
	}
	return append([]byte(nil), e.val...), nil
}

// Delete implements KV.
func (m *Memory) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
	return nil
}

// Close implements Store.
func (m *Memory) Close() error { return nil }

// sweepEvery is how many Puts pass between sweeps (amortized: a sweep
// is linear in the values kept).
const sweepEvery = 64

// sweepLocked drops expired values, so nothing grows without bound.
func (m *Memory) sweepLocked() {
	now := m.clk.Now()
	for k, e := range m.values {
		if !now.Before(e.expires) {
			delete(m.values, k)
		}
	}
}
