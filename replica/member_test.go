package replica

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/store"
)

// flaky is a store whose membership calls fail while down is set.
type flaky struct {
	store.Membership
	down atomic.Bool
}

func (f *flaky) Register(ctx context.Context, id, addr string, ttl time.Duration) error {
	if f.down.Load() {
		return store.ErrUnreachable
	}
	return f.Membership.Register(ctx, id, addr, ttl)
}

func (f *flaky) Members(ctx context.Context) (map[string]string, error) {
	if f.down.Load() {
		return nil, store.ErrUnreachable
	}
	return f.Membership.Members(ctx)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestMemberRefreshLeaveAndLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory(nil, 0)
		st := &flaky{Membership: mem}
		var logs syncBuf
		log := slog.New(slog.NewTextHandler(&logs, nil))
		a, err := Join(ctx, st, "ra", "127.0.0.1:1001", MemberOptions{TTL: 3 * time.Second, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Join(ctx, st, "rb", "127.0.0.1:1002", MemberOptions{TTL: 3 * time.Second, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		// Well past the TTL, both are alive: each refreshes.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if addr, ok := a.Addr("rb"); !ok || addr != "127.0.0.1:1002" {
			t.Fatalf("ra sees rb at %q %v", addr, ok)
		}

		// The store lost: own handles only, one log line, no crash.
		st.down.Store(true)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !a.Degraded() || a.Losses() != 1 {
			t.Fatalf("degraded %v losses %d", a.Degraded(), a.Losses())
		}
		if _, ok := a.Addr("rb"); ok {
			t.Fatal("rb still listed with the store lost")
		}
		if addr, ok := a.Addr("ra"); !ok || addr != "127.0.0.1:1001" {
			t.Fatal("ra does not know itself with the store lost")
		}
		if n := strings.Count(logs.String(), "store lost"); n != 2 { // one per replica
			t.Fatalf("%d 'store lost' lines:\n%s", n, logs.String())
		}
		st.down.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if a.Degraded() || !strings.Contains(logs.String(), "store back") {
			t.Fatal("not back after the store returned")
		}

		// rb leaves: gone from the store at once, from ra's view at its
		// next refresh.
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := mem.Members(ctx); got["rb"] != "" {
			t.Fatalf("rb still registered: %v", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := a.Addr("rb"); ok {
			t.Fatal("ra still forwards to rb after it left")
		}
		_ = a.Close(ctx)
	})
}

func TestJoinUnreachable(t *testing.T) {
	st := &flaky{Membership: store.NewMemory(nil, 0)}
	st.down.Store(true)
	if _, err := Join(context.Background(), st, "ra", "127.0.0.1:1", MemberOptions{}); !errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("Join: %v", err)
	}
}

// A replica that joined after the last refresh is found at once: the
// miss reads the store (bounded: one read per missInterval).
func TestMemberFindsNewcomerOnMiss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &counting{Membership: store.NewMemory(nil, 0)}
		a, err := Join(ctx, st, "ra", "127.0.0.1:1001", MemberOptions{TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(ctx)
		_ = st.Register(ctx, "rb", "127.0.0.1:1002", time.Minute)
		if addr, ok := a.Addr("rb"); !ok || addr != "127.0.0.1:1002" {
			t.Fatalf("newcomer rb: %q %v", addr, ok)
		}
		before := st.lists.Load()
		for range 100 {
			a.Addr("gone")
		}
		if n := st.lists.Load() - before; n > 1 {
			t.Fatalf("100 misses within %v read the store %d times", missInterval, n)
		}
	})
}

type counting struct {
	store.Membership
	lists atomic.Int64
}

func (c *counting) Members(ctx context.Context) (map[string]string, error) {
	c.lists.Add(1)
	return c.Membership.Members(ctx)
}
