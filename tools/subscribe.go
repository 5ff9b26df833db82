package tools

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
	return s.feed.subscribe(&s.mu, fn)
}

// enqueue records ch for delivery. Called with mu held.
func (s *Set) enqueue(ch Change) {
	s.listOK = false
	s.feed.enqueue(ch)
}

// unlockAndDeliver releases mu, first delivering what is queued (see feed).
func (s *Set) unlockAndDeliver() { s.feed.unlockAndDeliver(&s.mu) }
