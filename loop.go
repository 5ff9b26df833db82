package mcpkeep

import "github.com/mcpkeep/mcpkeep/fsm"

// loop is the single owner of the lifecycle. It starts the activation
// attempt and then handles one message at a time until disposed.
//
// Which message goes to which handler (the handler fires the row's event
// through lifecycle.fire, whose guards drop what is stale):
//
//	mOpened          connecting.go  onOpened        (no event: the transport is watched)
//	mAttempt         connecting.go  onAttempt       connected | failed
//	mConnectTimeout  connecting.go  onConnectTimeout failed
//	mDeferralTimeout connecting.go  onDeferralTimeout failed
//	mSessionEnded    established.go onSessionEnded  closed
//	mStable          established.go onStable        stable
//	mToolsChanged    established.go onToolsChanged  tools_changed
//	mCatalogChanged  established.go onCatalogChanged catalog_changed
//	mSyncDone        established.go onSyncDone      (no event: the sync's outcome)
//	mCloseReturned   lost.go        onCloseReturned released | drained, at the barrier
//	mGone            lost.go        onGone          released | drained, at the barrier
//	mTermWindow      lost.go        onTermWindow    stuck
//	mRetryDue        backoff.go     onRetryDue      retry_due
//	mReconnect       backoff.go     onReconnect     reconnect
//	mDispose         dispose.go     onDispose       dispose
//	mDrainTimeout    dispose.go     onDrainTimeout  drain_timeout
//	mDemand          idle.go        onDemand        demand
//	mIdleTimeout     idle.go        onIdleTimeout   idle_timeout
//	mSyncRelease     idle.go        onSyncRelease   (no event: a held sync starts)
//	mStopIdle        stopidle.go    onStopIdle      idle_timeout (a person's idle stop)
func (s *Supervisor) loop() {
	defer close(s.done)
	defer close(s.stop)
	lc := s.lc
	settled := lc.settled
	if lc.opts.Lazy && lc.hinted {
		// A lazy server listed from its cache waits for a request.
		lc.m = fsm.NewAt(fsm.Idle)
		lc.activationDone(nil)
	} else {
		g := lc.enterConnecting()
		g.activation, g.cause = true, StartStartup
		if settled && !lc.opts.FailOnStartupError {
			// Listed from the cache, or not expected: Start need not wait.
			lc.activationDone(nil)
		}
	}
	lc.publish()
	for !lc.finished {
		lc.handle(<-s.inbox)
		lc.publish()
	}
}

func (lc *lifecycle) handle(m message) {
	if m.ack != nil {
		close(m.ack) // the loop owns what m carries from here on
	}
	switch m.kind {
	case mOpened:
		lc.onOpened(m)
	case mAttempt:
		lc.onAttempt(m)
	case mConnectTimeout:
		lc.onConnectTimeout(m)
	case mDeferralTimeout:
		lc.onDeferralTimeout(m)
	case mSessionEnded:
		lc.onSessionEnded(m)
	case mStable:
		lc.onStable(m)
	case mToolsChanged:
		lc.onToolsChanged(m)
	case mCatalogChanged:
		lc.onCatalogChanged(m)
	case mSyncDone:
		lc.onSyncDone(m)
	case mCloseReturned:
		lc.onCloseReturned(m)
	case mGone:
		lc.onGone(m)
	case mTermWindow:
		lc.onTermWindow(m)
	case mRetryDue:
		lc.onRetryDue(m)
	case mReconnect:
		m.reply <- lc.onReconnect(m)
	case mDispose:
		lc.onDispose(m)
	case mDrainTimeout:
		lc.onDrainTimeout(m)
	case mInspect:
		m.probe()
	case mDemand:
		lc.onDemand(m)
	case mIdleTimeout:
		lc.onIdleTimeout(m)
	case mSyncRelease:
		lc.onSyncRelease(m)
	case mStopIdle:
		m.reply <- lc.onStopIdle(m)
	}
}
