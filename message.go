package mcpkeep

import (
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type msgKind uint8

const (
	mDerived         msgKind = iota // the loop itself: an event a handler derives (released, stuck)
	mOpened                         // attempt: the transport is open
	mAttempt                        // attempt: finished (cs + lists, or err)
	mConnectTimeout                 // timer: connect timeout of gen
	mDeferralTimeout                // timer: gen waited too long for an older barrier
	mSessionEnded                   // watcher: ClientSession.Wait returned
	mCloseReturned                  // closer: ClientSession.Close returned
	mGone                           // watcher: the transport's close signal
	mTermWindow                     // timer: gen's barrier deadline
	mRetryDue                       // timer: backoff elapsed (seq)
	mStable                         // timer: gen stayed up for the stability window
	mToolsChanged                   // SDK: tools/list_changed from gen
	mCatalogChanged                 // SDK: prompts or resources list_changed from gen (kinds)
	mSyncDone                       // sync: a re-sync of kinds finished
	mReconnect                      // host: manual restart
	mDispose                        // host: shut down
	mDrainTimeout                   // timer: drain exceeded the termination window
	mInspect                        // tests: read loop-owned state
	mDemand                         // host: a request needs the (idle) server
	mIdleTimeout                    // timer: gen's idle window elapsed
	mSyncRelease                    // requests: the demand's requests ended (or timer: the hold's bound)
	mStopIdle                       // host: stop the established gen for idleness now (StopIdle)
)

// message is the only way into the loop. gen names the generation the
// signal belongs to (seq the retry timer); the guards drop it when that
// generation or timer is no longer current.
type message struct {
	kind  msgKind
	gen   uint64
	seq   uint64 // timer identity for retry timers
	err   error
	tg    transport.Generation
	cs    *mcp.ClientSession
	kinds listKinds // mCatalogChanged, mSyncDone: which lists; mAttempt: what a listLater generation offers
	lists *lists    // mAttempt, mSyncDone: what was listed
	reply chan error
	probe func()        // mInspect: runs on the loop goroutine
	ack   chan struct{} // closed when the loop takes the message (handoff)
}
