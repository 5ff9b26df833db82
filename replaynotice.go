package mcpkeep

import "context"

// A task (docs/design.md §25) runs its call through Call like any other
// and must say "working" while Call re-sends a lost replay-safe call on
// the next generation (§21). The notice rides on the call's context so
// Call's signature and its outage loop stay as they are.

type replayNoticeKey struct{}

// WithReplayNotice returns ctx carrying fn: Call and CallRaw call fn
// (on the caller's goroutine) when a call made with that context was
// lost with its generation and is to be sent once more on the next
// one. fn must not block.
func WithReplayNotice(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, replayNoticeKey{}, fn)
}

// noticeReplay tells ctx's WithReplayNotice function, if any.
func noticeReplay(ctx context.Context) {
	if fn, ok := ctx.Value(replayNoticeKey{}).(func()); ok && fn != nil {
		fn()
	}
}
