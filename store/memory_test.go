package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

func TestMemoryContract(t *testing.T) { contract(t, NewMemory(clock.NewMock(), 1<<16)) }

func TestMemoryExpires(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	m := NewMemory(clk, 16)
	_ = m.Register(ctx, "r1", "127.0.0.1:1", time.Second)
	_ = m.Put(ctx, "k", []byte("v"), time.Second)
	clk.Add(999 * time.Millisecond)
	if got, _ := m.Members(ctx); got["r1"] == "" {
		t.Fatal("r1 gone before its TTL")
	}
	if _, err := m.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Millisecond)
	if got, _ := m.Members(ctx); len(got) != 0 {
		t.Fatalf("members after the TTL: %v", got)
	}
	if _, err := m.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after the TTL: %v", err)
	}
	if err := m.Put(ctx, "k", make([]byte, 17), time.Second); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put over the bound: %v", err)
	}
}

// Expired values are swept by later Puts: the map does not grow with
// keys nobody reads again.
func TestMemorySweeps(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	m := NewMemory(clk, 16)
	for i := range 1000 {
		_ = m.Put(ctx, string(rune('a'+i%26))+time.Duration(i).String(), nil, time.Second)
		clk.Add(time.Second)
	}
	m.mu.Lock()
	n := len(m.values)
	m.mu.Unlock()
	if n > sweepEvery {
		t.Fatalf("%d values kept, all but the last expired", n)
	}
}
