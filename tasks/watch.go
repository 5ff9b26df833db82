package tasks

// Watching a task (docs/design.md §25): the front waits a grace period
// for a task to end or, for a 2026-07-28 host's call, to ask for input,
// and answers the call accordingly; it needs to hear each change, not
// only the end (Done).

// Watch returns the live task of id as it is now and a channel closed at
// its next change: of its status, of its open input requests, or its
// end. ok is false for a task that is not live (ended, or unknown).
func (e *Engine) Watch(id string) (rec Record, moved <-chan struct{}, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.live[id]
	if t == nil {
		return Record{}, nil, false
	}
	return t.snapshot(), t.moved, true
}

// movedLocked wakes the task's watchers; e.mu is held.
func (t *task) movedLocked() {
	close(t.moved)
	t.moved = make(chan struct{})
}
