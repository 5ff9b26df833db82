package tools

import (
	"slices"
	"testing"
)

func TestUnsubscribe(t *testing.T) {
	s := NewSet(Limits{})
	_ = s.Reserve("s")
	var a, b int
	unA := s.Subscribe(func(Change) { a++ })
	unB := s.Subscribe(func(Change) { b++ })
	mustReplace(t, s, "s", 1, defs("s__1"))
	unA()
	unA() // idempotent
	mustReplace(t, s, "s", 2, defs("s__2"))
	unB()
	mustReplace(t, s, "s", 3, defs("s__3"))
	if a != 1 || b != 2 {
		t.Errorf("a saw %d changes (want 1), b saw %d (want 2)", a, b)
	}
}

// A subscriber may read and even change the Set; a change it causes is
// delivered after it returns, to everyone, in apply order.
func TestSubscriberReentersSet(t *testing.T) {
	s := NewSet(Limits{})
	_ = s.Reserve("a")
	_ = s.Reserve("mirror")
	var seen []string
	var lists [][]string
	s.Subscribe(func(c Change) {
		seen = append(seen, c.Server+"/"+c.Kind.String())
		lists = append(lists, publicNames(s.List()))
		if c.Server == "a" && c.Kind == Replaced {
			// Mirror a's tools under another server, from inside the callback.
			if err := s.Replace("mirror", c.Gen, defs("mirror__"+c.Tools[0].Name)); err != nil {
				t.Error(err)
			}
			if len(seen) != 1 {
				t.Error("reentrant change delivered before the callback returned")
			}
		}
	})
	mustReplace(t, s, "a", 1, defs("a__x"))
	want := []string{"a/replaced", "mirror/replaced"}
	if !slices.Equal(seen, want) {
		t.Errorf("seen = %q, want %q", seen, want)
	}
	// The first callback ran before the mirror was applied.
	if !slices.Equal(lists[0], []string{"a__x"}) || !slices.Equal(lists[1], []string{"a__x", "mirror__a__x"}) {
		t.Errorf("lists seen = %q", lists)
	}
}

// While one goroutine is inside a callback, other goroutines apply changes
// and return at once (no lock is held during the call); the blocked
// deliverer then delivers them in apply order. A subscriber added while
// changes are queued sees only later ones.
func TestDeliveryOutsideLockInOrder(t *testing.T) {
	s := NewSet(Limits{})
	for _, srv := range []string{"a", "b", "c", "d"} {
		_ = s.Reserve(srv)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	var got []string
	s.Subscribe(func(c Change) {
		got = append(got, c.Server)
		if c.Server == "a" {
			close(entered)
			<-release
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		mustReplace(t, s, "a", 1, defs("a__1")) // becomes the deliverer and blocks
	}()
	<-entered

	mustReplace(t, s, "b", 1, defs("b__1")) // returns although a's delivery is stuck
	s.Remove("b")
	var late, gone []string
	s.Subscribe(func(c Change) { late = append(late, c.Server) })
	unsubscribe := s.Subscribe(func(c Change) { gone = append(gone, c.Server) })
	mustReplace(t, s, "c", 1, defs("c__1"))
	unsubscribe() // c is queued for it, but it is gone before delivery
	if _, _, ok := s.Lookup("c__1"); !ok {
		t.Error("state not applied while delivery is pending")
	}

	close(release)
	<-done
	mustReplace(t, s, "d", 1, defs("d__1")) // delivered by this goroutine

	if want := []string{"a", "b", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("first subscriber saw %q, want %q", got, want)
	}
	if want := []string{"c", "d"}; !slices.Equal(late, want) {
		t.Errorf("late subscriber saw %q, want %q", late, want)
	}
	if len(gone) != 0 {
		t.Errorf("unsubscribed subscriber saw %q", gone)
	}
}

// A panicking subscriber reaches the caller that was delivering, and does
// not wedge delivery: queued changes go out with the next change.
func TestSubscriberPanic(t *testing.T) {
	s := NewSet(Limits{})
	_ = s.Reserve("s")
	var got []uint64
	s.Subscribe(func(c Change) {
		got = append(got, c.Gen)
		if c.Gen == 1 {
			mustReplace(t, s, "s", 2, defs("s__2")) // queued behind this call
			panic("boom")
		}
	})
	func() {
		defer func() {
			if recover() != "boom" {
				t.Error("panic did not reach the caller")
			}
		}()
		mustReplace(t, s, "s", 1, defs("s__1"))
	}()
	if gen, _, _ := s.Server("s"); gen != 2 {
		t.Errorf("gen = %d, want 2 applied", gen)
	}
	if !slices.Equal(got, []uint64{1}) {
		t.Errorf("gens delivered before the next change = %v, want [1]", got)
	}
	mustReplace(t, s, "s", 3, defs("s__3"))
	if !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("gens delivered = %v, want [1 2 3]", got)
	}
}

func TestSubscribeNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	NewSet(Limits{}).Subscribe(nil)
}
