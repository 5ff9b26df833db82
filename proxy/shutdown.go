package proxy

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
)

// Shutdown stops serving, bounded by ctx: readiness turns 503 at once;
// requests in flight get DrainGrace to finish, then are cancelled (the
// servers get notifications/cancelled); host sessions are closed; the
// pool is disposed through every server's close barrier. It returns the
// pool's Dispose error (an incomplete shutdown) or ctx's.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Stop()
	grace := cmp.Or(s.opts.DrainGrace, DefaultDrainGrace)
	t := time.NewTimer(grace)
	select {
	case <-s.calls.idle():
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	taskErr := s.tasks.close(ctx) // tasks working end failed, kept (§25)
	s.cancel()                    // cancels calls in flight and the first apply
	s.closeSessions(ctx)
	s.host.outboxes.close(ctx)
	s.host.updates.close(ctx)
	err := taskErr
	if pool, ok := s.Pool(); ok {
		err = pool.Dispose(ctx)
		select {
		case <-s.applied:
		case <-ctx.Done():
			err = errors.Join(err, ctx.Err())
		}
	}
	err = errors.Join(err, s.twins.dispose(ctx))
	s.mu.Lock()
	s.mu.closing = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.sessionsWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}

// closeSessions ends every host session at once: one that does not read
// must not hold the others' end (each Close waits for its handlers,
// whose calls are cancelled by now).
func (s *Server) closeSessions(ctx context.Context) {
	var wg sync.WaitGroup
	for ss := range s.srv.Sessions() {
		wg.Go(func() { _ = ss.Close() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// track registers a host request relayed to the pool: its context ends
// with ctx or at Shutdown's cancel, and Shutdown's grace waits for it.
func (s *Server) track(ctx context.Context) (context.Context, func()) {
	s.calls.add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		s.calls.add(-1)
	}
}

// inflight counts requests in flight; idle is closed while none is.
type inflight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (c *inflight) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		c.zero = make(chan struct{})
		close(c.zero)
	}
	if c.n == 0 && d > 0 {
		c.zero = make(chan struct{})
	}
	c.n += d
	if c.n == 0 {
		close(c.zero)
	}
}

func (c *inflight) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *inflight) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		c.zero = make(chan struct{})
		close(c.zero)
	}
	return c.zero
}
