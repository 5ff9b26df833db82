package tools

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Many writers (one per server, as supervisors are) replace, re-sync
// unchanged, remove and fight over one shared public name, while readers
// list and look up. Afterwards the change feed, replayed, must equal the
// Set's state; every server must have seen exactly one change per swap its
// writer observed, in its gen order; readers must never see a torn state.
func TestConcurrentReplaceAndRead(t *testing.T) {
	const (
		writers = 8
		steps   = 300
		readers = 4
		reads   = 300
	)
	s := NewSet(Limits{})

	var inside atomic.Int32
	model := map[string][]Tool{} // replay of the feed; touched only by the serialized callback
	events := map[string]int{}
	lastGen := map[string]uint64{}
	var feedErr []string
	s.Subscribe(func(c Change) {
		if !inside.CompareAndSwap(0, 1) {
			feedErr = append(feedErr, "concurrent callback")
		}
		defer inside.Store(0)
		if c.Gen < lastGen[c.Server] {
			feedErr = append(feedErr, fmt.Sprintf("%s: gen %d after %d", c.Server, c.Gen, lastGen[c.Server]))
		}
		lastGen[c.Server] = c.Gen
		events[c.Server]++
		model[c.Server] = c.Tools
	})

	expected := make([]int, writers)
	var wg sync.WaitGroup
	for w := range writers {
		server := fmt.Sprintf("s%d", w)
		if err := s.Reserve(server); err != nil {
			t.Fatal(err)
		}
		variants := [][]Tool{
			defs(server+"__a", server+"__b"),
			defs(server + "__a"),
			defs(server+"__a", "shared"),
			{},
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var cur []Tool
			for step := range steps {
				gen := uint64(step + 1)
				v := rng.IntN(len(variants) + 1)
				if v == len(variants) {
					s.Remove(server)
					if len(cur) > 0 {
						expected[w]++
					}
					cur = nil
					continue
				}
				next := variants[v]
				err := s.Replace(server, gen, next)
				switch {
				case err == nil:
					if len(cur) != len(next) || len(next) > 0 && !cmp.Equal(cur, next) { // no tools == no tools
						expected[w]++
					}
					cur = next
				case errors.Is(err, ErrConflict) && slices.ContainsFunc(next, func(d Tool) bool { return d.PublicName == "shared" }):
				default:
					t.Errorf("%s: Replace: %v", server, err)
					return
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for range reads {
				list := s.List()
				if !slices.IsSortedFunc(list, byPublicName) {
					t.Error("List not sorted")
					return
				}
				for i := 1; i < len(list); i++ {
					if list[i].PublicName == list[i-1].PublicName {
						t.Errorf("List has %q twice", list[i].PublicName)
						return
					}
				}
				for _, d := range list {
					srv, got, ok := s.Lookup(d.PublicName)
					if ok && (got.PublicName != d.PublicName ||
						d.PublicName != "shared" && !strings.HasPrefix(d.PublicName, srv+"__")) {
						t.Errorf("Lookup(%q) = %q %+v", d.PublicName, srv, got)
						return
					}
				}
				_, _, _ = s.Server("s0")
			}
		})
	}
	wg.Wait()

	if len(feedErr) > 0 {
		t.Fatalf("feed: %q", feedErr)
	}
	total := 0
	var want []Tool
	for w := range writers {
		server := fmt.Sprintf("s%d", w)
		if events[server] != expected[w] {
			t.Errorf("%s: %d changes delivered, %d swaps applied", server, events[server], expected[w])
		}
		total += events[server]
		_, d, _ := s.Server(server)
		if len(d) != len(model[server]) || len(d) > 0 && !cmp.Equal(d, model[server]) {
			t.Errorf("%s: feed replay %q, state %q", server, publicNames(model[server]), publicNames(d))
		}
		want = append(want, d...)
	}
	slices.SortFunc(want, byPublicName)
	if diff := cmp.Diff(want, s.List()); diff != "" {
		t.Errorf("List disagrees with Server (-servers +list):\n%s", diff)
	}
	if total < writers*steps/4 {
		t.Errorf("only %d changes: the test exercised too little", total)
	}
}
