package mcpkeep

import "context"

// A server's request to the host (sampling, elicitation, roots) belongs to
// the host's call that caused it (docs/design.md §19, "A server's request
// goes to the host that caused it"). The SDK's client hands the request to
// its handler on a context of its own, which knows nothing of the calls;
// the supervisor does: the context a HostHandlers request handler gets
// also sees the calls that were in flight over the server's connection
// when the request arrived.
//
// Value(key) of that context is the request's own value when it has one,
// else the value of the one call in flight whose context has one (a
// request made while exactly one such call is in flight belongs to it,
// however many calls without that value are in flight: the supervisor's
// own list and sticky-state requests carry none). With several, Value is
// nil and CallsInFlight lists them, so the host can tell a call of its
// own from a true tie between callers.

// relatedCtx is a server request's context as the host handlers get it.
type relatedCtx struct {
	context.Context
	calls []context.Context // the callers' contexts in flight at its arrival
}

type relatedKey struct{}

func (c *relatedCtx) Value(key any) any {
	if key == (relatedKey{}) {
		return c
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	var one any
	for _, call := range c.calls {
		v := call.Value(key)
		if v == nil {
			continue
		}
		if one != nil {
			return nil // several calls carry one: ambiguous
		}
		one = v
	}
	return one
}

// related wraps ctx, a server's request's context, with the callers'
// contexts of the requests in flight over g now.
func (g *generation) related(ctx context.Context) context.Context {
	return &relatedCtx{Context: ctx, calls: g.callers()}
}

// callers lists the callers' contexts of the requests in flight over g.
// A caller whose context can never be cancelled over a transport whose
// contexts are not reused is not registered (begin): it is not listed.
func (g *generation) callers() []context.Context {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	var out []context.Context
	for c := g.inflight.head; c != nil; c = c.next {
		if c.caller != nil {
			out = append(out, c.caller)
		}
	}
	for _, c := range g.calls {
		out = append(out, c.caller)
	}
	return out
}

// CallsInFlight returns the contexts of the calls (the callers' contexts of
// Call, CallRaw and the other requests relayed to the server) that were in
// flight over the server's connection when the server's request arrived,
// for the context a HostHandlers request handler got; nil for any other
// context. A handler uses it when several calls could have caused the
// request (its context's Value is then nil for a key they all carry).
func CallsInFlight(ctx context.Context) []context.Context {
	if c, ok := ctx.Value(relatedKey{}).(*relatedCtx); ok {
		return c.calls
	}
	return nil
}
