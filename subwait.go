package mcpkeep

import (
	"errors"
	"slices"
	"sync"
)

// subWait is the one 2026-07-28 subscription a generation's reconcile
// waits for at a time (reconcile subscribes one URI after the other): the
// server's acknowledgement lists it when taken, and leaves it out, or
// fails the listen, when refused.
type subWait struct {
	mu  sync.Mutex
	uri string
	ch  chan error
}

var errNotAgreed = errors.New("the server did not take the subscription")

// expect arms the wait for uri and returns its channel.
func (w *subWait) expect(uri string) <-chan error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uri, w.ch = uri, make(chan error, 1)
	return w.ch
}

func (w *subWait) done() {
	w.mu.Lock()
	w.uri, w.ch = "", nil
	w.mu.Unlock()
}

func (w *subWait) answer(uris []string, err error, acked bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		return
	}
	switch {
	case acked && slices.Contains(uris, w.uri):
		w.ch <- nil
	case acked && len(uris) == 0:
		w.ch <- errNotAgreed // the empty acknowledgement of the URI's own listen
	case !acked && slices.Contains(uris, w.uri):
		w.ch <- err
	default:
		return
	}
	w.ch = nil
}

func (g *generation) subAcked(uris []string)             { g.subWait.answer(uris, nil, true) }
func (g *generation) subFailed(uris []string, err error) { g.subWait.answer(uris, err, false) }
