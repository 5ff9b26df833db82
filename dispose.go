package mcpkeep

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
)

// The rows into and out of draining: dispose (from every live state),
// drained and drain_timeout.

func (lc *lifecycle) onDispose(m message) {
	t, ok := lc.fire(fsm.Dispose, m)
	if !ok {
		return // already draining or disposed
	}
	stopTimer(&lc.retryTimer)
	lc.nextRetry = time.Time{}
	if lc.cur != nil {
		lc.endGen(lc.cur)
	}
	lc.drainTimer = lc.opts.Clock.AfterFunc(lc.opts.TerminationWindow, func() {
		lc.s.send(message{kind: mDrainTimeout})
	})
	lc.emit(t, lc.cur, nil)
	lc.activationDone(ErrDisposed)
	if lc.cur != nil {
		lc.checkBarrier(lc.cur) // a deferred attempt has nothing to wait for
	}
	lc.checkDrained()
}

// checkDrained finishes the drain once the attempt, every sync and every
// barrier have settled.
func (lc *lifecycle) checkDrained() {
	if lc.m.State() != fsm.Draining || lc.syncs > 0 || len(lc.barrierPending(nil)) > 0 {
		return
	}
	t, ok := lc.fire(fsm.Drained, message{kind: mDispose})
	if !ok {
		return
	}
	lc.finish(t, nil)
}

func (lc *lifecycle) onDrainTimeout(m message) {
	t, ok := lc.fire(fsm.DrainTimeout, m)
	if !ok {
		return
	}
	err := fmt.Errorf("%w: generations %v still closing after %s", ErrIncompleteShutdown, lc.barrierPending(nil), lc.opts.TerminationWindow)
	lc.log(slog.LevelError, "incomplete shutdown", lc.cur, slog.Any("err", err))
	lc.finish(t, err)
}

func (lc *lifecycle) finish(t fsm.Transition, err error) {
	stopTimer(&lc.drainTimer)
	stopTimer(&lc.retryTimer)
	for _, g := range lc.gens {
		stopTimer(&g.termTimer)
		stopTimer(&g.stableTimer)
		stopTimer(&g.connectTimer)
		stopTimer(&g.deferTimer)
		stopTimer(&g.idleTimer)
		stopTimer(&g.syncTimer)
	}
	lc.rememberNotComing()
	lc.opts.Catalog.RemoveCatalog(lc.opts.Name)
	lc.tools, lc.listed = 0, listedCatalog{}
	if err == nil {
		lc.s.releaseName(true)
	} else {
		// Not proven gone: unregister the tools but keep the name until
		// the late close signals arrive (R22).
		lc.opts.Sink.Remove(lc.opts.Name)
		if q, ok := lc.opts.Sink.(tools.Quarantiner); ok {
			q.Quarantine(lc.opts.Name)
		}
		var gone []<-chan struct{}
		for _, g := range lc.gens {
			if g.tg != nil && !g.gone {
				gone = append(gone, g.tg.Gone())
			}
		}
		go lc.s.awaitRelease(gone)
	}
	lc.finished = true
	lc.s.mu.Lock()
	lc.s.mu.disposeErr = err
	lc.s.mu.Unlock()
	lc.emit(t, lc.cur, err)
}

// unregister removes the server's tools (exhausted by budget, stuck).
func (lc *lifecycle) unregister() {
	lc.opts.Sink.Remove(lc.opts.Name)
	lc.opts.Catalog.RemoveCatalog(lc.opts.Name)
	lc.tools, lc.listed = 0, listedCatalog{}
}
