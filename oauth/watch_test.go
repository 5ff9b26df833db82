package oauth

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestWatchReportsSignIns: Watch names an entry that a sign-in stored or
// replaced, not one a refresh rewrote, nor what was there before it
// started.
func TestWatchReportsSignIns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Store{Dir: t.TempDir()}
		before := &Entry{URL: "http://old/mcp", AccessToken: "x", SignedIn: time.Unix(1, 0)}
		if err := s.Save(before); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []string
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, WatchOptions{Dir: s.Dir}, func(url, client string) {
				mu.Lock()
				got = append(got, url+"|"+client)
				mu.Unlock()
			})
		}()
		look := func() []string {
			time.Sleep(DefaultWatchInterval)
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), got...)
		}
		synctest.Wait()
		e := &Entry{URL: "http://h/mcp", ConfigClientID: "c", AccessToken: "a", SignedIn: time.Unix(10, 0)}
		if err := s.Save(e); err != nil {
			t.Fatal(err)
		}
		if g := look(); len(g) != 1 || g[0] != "http://h/mcp|c" {
			t.Fatalf("after a sign-in: %v", g)
		}
		e.AccessToken = "refreshed"
		if err := s.Save(e); err != nil {
			t.Fatal(err)
		}
		if g := look(); len(g) != 1 {
			t.Fatalf("a refresh was reported: %v", g)
		}
		e.SignedIn = time.Unix(20, 0)
		if err := s.Save(e); err != nil {
			t.Fatal(err)
		}
		if g := look(); len(g) != 2 {
			t.Fatalf("a second sign-in was not reported: %v", g)
		}
		cancel()
		<-done
	})
}

// TestWatchActive: while Active says false the store is not looked at; a
// sign-in stored meanwhile is reported once it says true (a server added
// by a reload is told of it).
func TestWatchActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Store{Dir: t.TempDir()}
		var mu sync.Mutex
		var got []string
		active := false
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, WatchOptions{Dir: s.Dir, Active: func() bool {
				mu.Lock()
				defer mu.Unlock()
				return active
			}}, func(url, _ string) {
				mu.Lock()
				got = append(got, url)
				mu.Unlock()
			})
		}()
		synctest.Wait()
		if err := s.Save(&Entry{URL: "http://h/mcp", AccessToken: "a", SignedIn: time.Unix(10, 0)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * DefaultWatchInterval)
		synctest.Wait()
		mu.Lock()
		if len(got) != 0 {
			t.Errorf("reported while inactive: %v", got)
		}
		active = true
		mu.Unlock()
		time.Sleep(DefaultWatchInterval)
		synctest.Wait()
		mu.Lock()
		if len(got) != 1 || got[0] != "http://h/mcp" {
			t.Errorf("after Active: %v, want the sign-in", got)
		}
		mu.Unlock()
		cancel()
		<-done
	})
}
