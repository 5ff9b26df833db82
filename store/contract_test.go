package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// contract checks what every Store does, whatever holds it.
func contract(t *testing.T, s Store) {
	ctx := context.Background()
	t.Run("membership", func(t *testing.T) {
		if err := s.Register(ctx, "r1", "127.0.0.1:8731", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Register(ctx, "r2.example", "[::1]:9000", time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := s.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got["r1"] != "127.0.0.1:8731" || got["r2.example"] != "[::1]:9000" {
			t.Fatalf("members %v", got)
		}
		if err := s.Leave(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Members(ctx)
		if _, ok := got["r1"]; ok {
			t.Fatalf("r1 left but is listed: %v", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			name string
			err  error
		}{
			{"id with ~", s.Register(ctx, "a~b", "127.0.0.1:1", time.Minute)},
			{"empty id", s.Register(ctx, "", "127.0.0.1:1", time.Minute)},
			{"addr without port", s.Register(ctx, "r", "127.0.0.1", time.Minute)},
			{"port 0", s.Register(ctx, "r", "127.0.0.1:0", time.Minute)},
			{"zero ttl", s.Register(ctx, "r", "127.0.0.1:1", 0)},
			{"ttl too long", s.Put(ctx, "k", nil, MaxTTL+time.Second)},
			{"empty key", s.Put(ctx, "", nil, time.Minute)},
			{"long key", s.Put(ctx, strings.Repeat("k", maxKey+1), nil, time.Minute)},
		} {
			if !errors.Is(c.err, ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", c.name, c.err)
			}
		}
	})
	t.Run("kv", func(t *testing.T) {
		if _, err := s.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get missing: %v", err)
		}
		for _, v := range [][]byte{{}, []byte("result"), bytes.Repeat([]byte{0, 0xff}, 1000)} {
			if err := s.Put(ctx, "task/1", v, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "task/1")
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("Get: %q %v, want %q", got, err, v)
			}
		}
		if err := s.Delete(ctx, "task/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "task/1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get deleted: %v", err)
		}
		if err := s.Delete(ctx, "never"); err != nil {
			t.Fatalf("Delete missing: %v", err)
		}
	})
}
