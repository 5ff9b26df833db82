package proxy

import (
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
)

// uiRecent is how many transitions per server the live page shows and
// lights on the chart (docs/design.md §28).
const uiRecent = 8

// uiTransition is one transition as the live page shows it.
type uiTransition struct {
	Gen   uint64 `json:"gen"`
	From  string `json:"from"`
	To    string `json:"to"`
	Event string `json:"event"`
	At    string `json:"at"` // RFC 3339 with milliseconds
	Err   string `json:"err,omitempty"`
}

// uiHub keeps what the live page needs beyond the pool's snapshots (each
// server's recent transitions) and wakes the page's event streams. It is
// fed by Health's observer, the same one /readyz and `mcpkeep status`
// read (docs/design.md §28): it runs on the supervisors' loops, so it only
// takes a short lock and never blocks.
type uiHub struct {
	mu      sync.Mutex
	recent  map[string][]uiTransition
	wake    chan struct{} // closed and replaced at every change
	stopped chan struct{} // closed when the process starts shutting down
	stop1   sync.Once
}

func newUIHub() *uiHub {
	return &uiHub{recent: map[string][]uiTransition{}, wake: make(chan struct{}), stopped: make(chan struct{})}
}

// observe records t and wakes every stream. A coalesced notification
// changes nothing the page shows.
func (h *uiHub) observe(t mcpkeep.Transition) {
	if t.Coalesced {
		return
	}
	ut := uiTransition{Gen: t.Gen, From: t.From.String(), To: t.To.String(), Event: t.Event.String(),
		At: t.At.UTC().Format(time.RFC3339Nano)}
	if t.Err != nil {
		ut.Err = redactText(t.Err.Error())
	}
	h.mu.Lock()
	list := append(h.recent[t.Server], ut)
	if len(list) > uiRecent {
		list = append(list[:0:0], list[len(list)-uiRecent:]...)
	}
	h.recent[t.Server] = list
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

// changed returns a channel closed at the next change: take it before
// reading the state, so no change between the two is missed.
func (h *uiHub) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

// transitions returns a copy of server's recent transitions, oldest first.
func (h *uiHub) transitions(server string) []uiTransition {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]uiTransition{}, h.recent[server]...)
}

// stop ends every stream: the process is shutting down, and an open
// stream would hold the listener's Shutdown. The page reconnects by
// itself to the next mcpkeep on that address.
func (h *uiHub) stop() { h.stop1.Do(func() { close(h.stopped) }) }
