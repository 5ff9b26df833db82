package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeConfig is the resolved health probe of a generation.
type probeConfig struct {
	interval time.Duration // pause between the end of a probe and the next
	failures int           // consecutive failures that end the generation
	timeout  time.Duration // bound of one probe
}

// probeKey marks a probe's request context; the round tripper records in
// the probeMark that the probe went out on the wire.
type probeKey struct{}

type probeMark struct{ sent atomic.Bool }

type probeVerdict int

const (
	probeOK probeVerdict = iota
	probeFailed
	// probeUnknown: the SDK answered from its list cache (the server set
	// ttlMs > 0), so the server was not asked.
	probeUnknown
)

// runProbe asks the server for its tools every interval (tools/list: the
// cheapest request every server answers; ping is rejected by stateless
// servers). It ends the generation after the threshold of consecutive
// failures (the server is down or hung), or at the first success after
// a failure (the server restarted, or came back: its subscriptions/listen
// stream is dead and the SDK will not say so; a restarted stateless
// server may also serve other tools), unless a subscriptions/listen
// stream stayed open throughout, which proves the server did not
// restart. It stops when the generation ends.
func (g *httpGen) runProbe(cs *mcp.ClientSession) {
	defer g.probing.Done()
	fails := 0
	for {
		t := g.clock.Timer(g.probe.interval)
		select {
		case <-g.endCtx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		verdict, err := g.probeOnce(cs)
		if g.endCtx.Err() != nil {
			return
		}
		switch verdict {
		case probeUnknown:
			g.log.Debug("http: health probe answered from the SDK's cache")
		case probeFailed:
			fails++
			g.log.Debug("http: health probe failed", "failures", fails, "err", err)
			if fails >= g.probe.failures {
				g.endItself(fmt.Sprintf("health probe: %d consecutive failures, last: %v", fails, err))
				return
			}
		case probeOK:
			if fails == 0 {
				continue
			}
			if g.listenOpen() {
				g.log.Debug("http: health probe recovered; subscription stream intact", "failures", fails)
				fails = 0
				continue
			}
			g.endItself(fmt.Sprintf("health probe: %s answered again after %d failed probe(s); "+
				"renewing the session (a restarted server dropped its subscriptions)", g.url, fails))
			return
		}
	}
}

// probeOnce sends one tools/list, bounded by the probe timeout on the
// generation's clock. Any answer of the server counts, a JSON-RPC error
// included: it proves the server and the path to it work.
func (g *httpGen) probeOnce(cs *mcp.ClientSession) (probeVerdict, error) {
	mark := &probeMark{}
	ctx, cancel := g.clock.WithTimeout(context.WithValue(g.endCtx, probeKey{}, mark), g.probe.timeout)
	defer cancel()
	_, err := cs.ListTools(ctx, nil)
	switch {
	case err == nil && !mark.sent.Load():
		return probeUnknown, nil
	case err == nil, serverAnswered(err):
		return probeOK, nil
	case errors.Is(err, context.DeadlineExceeded):
		return probeFailed, fmt.Errorf("tools/list to %s: no answer within %s", g.url, g.probe.timeout)
	default:
		return probeFailed, err
	}
}

// The SDK's own JSON-RPC error codes for what never reached the server or
// never came back (jsonrpc2.ErrClientClosing, ErrServerClosing,
// ErrRejected): they are *jsonrpc.Error values too, but no server said so.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverAnswered reports whether err carries a JSON-RPC error the server
// sent (in an HTTP 200, or in the body of an HTTP error status).
func serverAnswered(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *jsonrpc.Error:
		switch e.Code {
		case codeClientClosing, codeServerClosing, codeRejected:
			return false
		}
		return true
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			if serverAnswered(x) {
				return true
			}
		}
		return false
	default:
		return serverAnswered(errors.Unwrap(err))
	}
}
