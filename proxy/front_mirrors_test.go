package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcpkeep/mcpkeep/tools"
)

// A change the Set queued behind the delivery in progress on another
// goroutine is not caught up until it was delivered: Serve's early wait
// (front_early.go) would otherwise connect the host's session while the
// SDK's lists still change.
func TestMirrorWatchWaitsForQueuedDeliveries(t *testing.T) {
	set, catalog := tools.NewSet(tools.Limits{}), tools.NewCatalog(tools.Limits{})
	w := newMirrorWatch()
	gate, inside := make(chan struct{}), make(chan struct{}, 2)
	set.Subscribe(w.tools(func(tools.Change) {
		inside <- struct{}{}
		<-gate
	}))
	catalog.Subscribe(w.catalog(func(tools.CatalogChange) {}))
	tool := func(name string) []tools.Tool {
		return []tools.Tool{{PublicName: name, Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	}
	for _, s := range []string{"a", "b"} {
		if err := set.Reserve(s); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := w.caughtUp(set, catalog, []string{"a", "b"}); !ok {
		t.Fatal("nothing registered: not caught up")
	}
	done := make(chan error, 1)
	go func() { done <- set.Replace("a", 1, tool("a__t")) }() // delivers, held in the mirror
	<-inside
	if err := set.Replace("b", 1, tool("b__t")); err != nil { // queued behind a's
		t.Fatal(err)
	}
	ok, next := w.caughtUp(set, catalog, []string{"a", "b"})
	if ok {
		t.Fatal("caught up while a's delivery runs and b's is queued")
	}
	close(gate)
	if err := <-done; err != nil { // a's Replace drained the queue: b's too
		t.Fatal(err)
	}
	select {
	case <-next:
	default:
		t.Error("the deliveries did not wake the waiter")
	}
	if ok, _ := w.caughtUp(set, catalog, []string{"a", "b"}); !ok {
		t.Error("not caught up after both deliveries")
	}
}
