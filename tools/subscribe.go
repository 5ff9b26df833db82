package tools

import "sync/atomic"

// Delivery of changes.
//
// Subscribers are called outside the Set's lock, so they may call the Set
// (List, Lookup, even Replace) without deadlocking, and without a goroutine
// of the Set's own, so nothing can leak. Each change is queued under the
// lock in apply order; whichever goroutine finds no delivery running
// becomes the deliverer and drains the queue, releasing the lock around
// each call. A goroutine that applies a change while another delivers just
// leaves it in the queue and returns. So every change reaches every
// subscriber exactly once, in apply order, one call at a time.
//
// A delivery mutex taken before releasing the state lock would also keep
// the order, but deadlocks as soon as a subscriber reads the Set while
// another goroutine waits to deliver.

type subscriber struct {
	fn  func(Change)
	off atomic.Bool // set by unsubscribe; checked before every call
}

// A delivery is a change and the subscribers registered when it was
// applied.
type delivery struct {
	change Change
	subs   []*subscriber
}

// Subscribe calls fn for every change applied from now on, in order,
// exactly once per atomic swap. Calls are serialized across all
// subscribers, made outside the Set's lock, on the goroutine of some
// Replace, Remove or Release (not necessarily the one that applied the
// change), so fn must not block for long. fn may call the Set; a change it
// causes is delivered after fn returns. Change carries the server's whole
// new set, so fn needs no List: by the time fn runs, later changes may
// already be applied.
//
// After unsubscribe returns fn is not called again, except for a call
// already under way on another goroutine. If fn panics, the panic reaches
// the caller of the Replace, Remove or Release that was delivering;
// changes still queued are delivered with the next change.
func (s *Set) Subscribe(fn func(Change)) (unsubscribe func()) {
	if fn == nil {
		panic("tools: Subscribe with nil func")
	}
	sub := &subscriber{fn: fn}
	s.mu.Lock()
	s.subs = append(s.subs[:len(s.subs):len(s.subs)], sub) // copy: queued deliveries keep the old slice
	s.mu.Unlock()
	return func() {
		if sub.off.Swap(true) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		subs := make([]*subscriber, 0, len(s.subs))
		for _, x := range s.subs {
			if x != sub {
				subs = append(subs, x)
			}
		}
		s.subs = subs
	}
}

// enqueue records ch for delivery. Called with mu held.
func (s *Set) enqueue(ch Change) {
	s.listOK = false
	if len(s.subs) == 0 {
		return
	}
	s.queue = append(s.queue, delivery{change: ch, subs: s.subs})
}

// unlockAndDeliver releases mu, first draining the queue unless another
// goroutine already does. Called with mu held.
func (s *Set) unlockAndDeliver() {
	if s.draining || len(s.queue) == 0 {
		s.mu.Unlock()
		return
	}
	s.draining = true
	finished := false
	defer func() {
		if !finished { // a subscriber panicked: let the next change deliver
			s.mu.Lock()
			s.draining = false
			s.mu.Unlock()
		}
	}()
	for len(s.queue) > 0 {
		d := s.queue[0]
		s.queue[0] = delivery{} // drop references for the GC
		s.queue = s.queue[1:]
		s.mu.Unlock()
		for _, sub := range d.subs {
			if !sub.off.Load() {
				sub.fn(d.change)
			}
		}
		s.mu.Lock()
	}
	s.queue = nil
	s.draining = false
	finished = true
	s.mu.Unlock()
}
