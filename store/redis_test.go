package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
	"github.com/redis/go-redis/v9"
)

func openTest(t *testing.T, rs *replicatest.Redis, o RedisOptions) *Redis {
	t.Helper()
	s, err := OpenRedis(context.Background(), rs.URL(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func raw(t *testing.T, rs *replicatest.Redis) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: rs.Addr, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisContract(t *testing.T) {
	rs := replicatest.StartRedis(t)
	contract(t, openTest(t, rs, RedisOptions{MaxValue: 1 << 16}))
}

// Keys carry their TTLs in Redis: nothing is kept without expiry.
func TestRedisTTLs(t *testing.T) {
	rs := replicatest.StartRedis(t)
	s := openTest(t, rs, RedisOptions{})
	ctx := context.Background()
	_ = s.Register(ctx, "r1", "127.0.0.1:1", 5*time.Second)
	_ = s.Put(ctx, "k", []byte("v"), 7*time.Second)
	c := raw(t, rs)
	for key, ttl := range map[string]time.Duration{"mcpkeep:member:r1": 5 * time.Second, "mcpkeep:kv:k": 7 * time.Second} {
		got, err := c.PTTL(ctx, key).Result()
		if err != nil || got <= 0 || got > ttl {
			t.Errorf("PTTL %s = %v %v, want (0, %v]", key, got, err, ttl)
		}
	}
}

// Whatever is in Redis is hostile: huge, malformed, of another type.
func TestRedisHostileContent(t *testing.T) {
	rs := replicatest.StartRedis(t)
	s := openTest(t, rs, RedisOptions{MaxValue: 1024})
	c := raw(t, rs)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, "mcpkeep:kv:huge", "v"+strings.Repeat("x", 8<<20), 0).Err())
	must(c.Set(ctx, "mcpkeep:kv:unmarked", "not written by mcpkeep", 0).Err())
	must(c.RPush(ctx, "mcpkeep:kv:list", "a", "b").Err())
	if _, err := s.Get(ctx, "huge"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge value: %v, want ErrTooLarge", err)
	}
	if _, err := s.Get(ctx, "unmarked"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unmarked value: %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctx, "list"); err == nil || errors.Is(err, ErrUnreachable) {
		t.Errorf("a list at the key: %v, want the server's error", err)
	}

	must(s.Register(ctx, "good", "127.0.0.1:8731", time.Minute))
	must(c.Set(ctx, "mcpkeep:member:huge", strings.Repeat("9", 1<<20), 0).Err())
	must(c.Set(ctx, "mcpkeep:member:garbage", "http://169.254.169.254/", 0).Err())
	must(c.Set(ctx, "mcpkeep:member:bad~id", "127.0.0.1:1", 0).Err())
	must(c.Set(ctx, "mcpkeep:member:noport", "10.0.0.1", 0).Err())
	must(c.RPush(ctx, "mcpkeep:member:alist", "127.0.0.1:1").Err())
	got, err := s.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["good"] != "127.0.0.1:8731" {
		t.Fatalf("members %v, want only good", got)
	}

	// Many members: the listing is capped.
	pipe := c.Pipeline()
	for i := range MaxMembers + 50 {
		pipe.Set(ctx, fmt.Sprintf("mcpkeep:member:m%d", i), "127.0.0.1:1", time.Minute)
	}
	_, err = pipe.Exec(ctx)
	must(err)
	if got, err := s.Members(ctx); err != nil || len(got) > MaxMembers {
		t.Fatalf("%d members (%v), cap %d", len(got), err, MaxMembers)
	}
}

func TestRedisOpenErrors(t *testing.T) {
	ctx := context.Background()
	port := replicatest.FreePort(t) // nobody listens there
	for _, c := range []struct {
		url string
		err error
	}{
		{fmt.Sprintf("redis://127.0.0.1:%d/0", port), ErrUnreachable},
		{"http://127.0.0.1:6379/0", ErrInvalid},
		{"redis://:secret@127.0.0.1:6379/0", ErrInvalid},
		{"redis://127.0.0.1:6379/0?dial_timeout=1s", ErrInvalid},
		{"unix:///tmp/redis.sock", ErrInvalid},
	} {
		s, err := OpenRedis(ctx, c.url, RedisOptions{Timeout: time.Second})
		if !errors.Is(err, c.err) {
			t.Errorf("OpenRedis(%q): %v, want %v", c.url, err, c.err)
		}
		if s != nil {
			_ = s.Close()
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// The password comes from the options (the environment), never the URL.
func TestRedisPassword(t *testing.T) {
	rs := replicatest.StartRedis(t, "--requirepass", "s3cret")
	if _, err := OpenRedis(context.Background(), rs.URL(), RedisOptions{}); err == nil {
		t.Fatal("no password, but opened")
	}
	s := openTest(t, rs, RedisOptions{Password: "s3cret"})
	if err := s.Put(context.Background(), "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
}

// A server lost after the start: every call is an error wrapping
// ErrUnreachable, bounded by the timeout, never a panic or a hang.
func TestRedisLostLater(t *testing.T) {
	rs := replicatest.StartRedis(t)
	s := openTest(t, rs, RedisOptions{Timeout: time.Second})
	ctx := context.Background()
	if err := s.Register(ctx, "r1", "127.0.0.1:1", time.Minute); err != nil {
		t.Fatal(err)
	}
	rs.Kill()
	if _, err := s.Members(ctx); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Members: %v", err)
	}
	if err := s.Register(ctx, "r1", "127.0.0.1:1", time.Minute); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Register: %v", err)
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Get: %v", err)
	}
}
