package tools

import (
	"sync"
	"sync/atomic"
)

// Delivery of changes, shared by Set and Catalog.
//
// Subscribers are called outside the registry's lock, so they may call the
// registry (List, Lookup, even Replace) without deadlocking, and without a
// goroutine of the registry's own, so nothing can leak. Each change is
// queued under the lock in apply order; whichever goroutine finds no
// delivery running becomes the deliverer and drains the queue, releasing
// the lock around each call. A goroutine that applies a change while
// another delivers just leaves it in the queue and returns. So every change
// reaches every subscriber exactly once, in apply order, one call at a
// time.
//
// A delivery mutex taken before releasing the state lock would also keep
// the order, but deadlocks as soon as a subscriber reads the registry while
// another goroutine waits to deliver.
type feed[C any] struct {
	subs     []*subscriber[C] // copy-on-write: a queued change keeps the slice it was applied under
	queue    []delivery[C]    // applied but not yet delivered, in apply order
	draining bool             // some goroutine is delivering queue
}

type subscriber[C any] struct {
	fn  func(C)
	off atomic.Bool // set by unsubscribe; checked before every call
}

// A delivery is a change and the subscribers registered when it was
// applied.
type delivery[C any] struct {
	change C
	subs   []*subscriber[C]
}

// subscribe adds fn; mu is the registry's lock (not held by the caller).
func (f *feed[C]) subscribe(mu *sync.Mutex, fn func(C)) (unsubscribe func()) {
	sub := &subscriber[C]{fn: fn}
	mu.Lock()
	f.subs = append(f.subs[:len(f.subs):len(f.subs)], sub) // copy: queued deliveries keep the old slice
	mu.Unlock()
	return func() {
		if sub.off.Swap(true) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		subs := make([]*subscriber[C], 0, len(f.subs))
		for _, x := range f.subs {
			if x != sub {
				subs = append(subs, x)
			}
		}
		f.subs = subs
	}
}

// enqueue records ch for delivery. Called with the registry's lock held.
func (f *feed[C]) enqueue(ch C) {
	if len(f.subs) == 0 {
		return
	}
	f.queue = append(f.queue, delivery[C]{change: ch, subs: f.subs})
}

// unlockAndDeliver releases mu, first draining the queue unless another
// goroutine already does. Called with mu held.
func (f *feed[C]) unlockAndDeliver(mu *sync.Mutex) {
	if f.draining || len(f.queue) == 0 {
		mu.Unlock()
		return
	}
	f.draining = true
	finished := false
	defer func() {
		if !finished { // a subscriber panicked: let the next change deliver
			mu.Lock()
			f.draining = false
			mu.Unlock()
		}
	}()
	for len(f.queue) > 0 {
		d := f.queue[0]
		var zero delivery[C]
		f.queue[0] = zero // drop references for the GC
		f.queue = f.queue[1:]
		mu.Unlock()
		for _, sub := range d.subs {
			if !sub.off.Load() {
				sub.fn(d.change)
			}
		}
		mu.Lock()
	}
	f.queue = nil
	f.draining = false
	finished = true
	mu.Unlock()
}
