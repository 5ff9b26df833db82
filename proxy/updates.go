package proxy

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// updates passes the servers' notifications/resources/updated to the
// subscribed hosts off the servers' notification paths: the SDK sends one
// to every subscribed session in turn, so a host that stops reading would
// hold the sender (up to the HTTP write bound). Updates of one URI queued
// while an earlier one waits are one update: the host rereads the
// resource either way.
type updates struct {
	srv *mcp.Server

	mu      sync.Mutex
	pending map[string]*mcp.ResourceUpdatedNotificationParams
	order   []string
	running bool
	closed  bool
	wg      sync.WaitGroup
}

func (u *updates) push(p *mcp.ResourceUpdatedNotificationParams) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	if u.pending == nil {
		u.pending = map[string]*mcp.ResourceUpdatedNotificationParams{}
	}
	if _, queued := u.pending[p.URI]; !queued {
		u.order = append(u.order, p.URI)
	}
	u.pending[p.URI] = p
	if !u.running {
		u.running = true
		u.wg.Go(u.send)
	}
}

func (u *updates) send() {
	for {
		u.mu.Lock()
		if len(u.order) == 0 || u.closed {
			u.running = false
			u.mu.Unlock()
			return
		}
		uri := u.order[0]
		u.order = u.order[1:]
		p := u.pending[uri]
		delete(u.pending, uri)
		u.mu.Unlock()
		_ = u.srv.ResourceUpdated(context.Background(), p)
	}
}

// close drops what is queued and waits for the sender, bounded by ctx.
func (u *updates) close(ctx context.Context) {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
